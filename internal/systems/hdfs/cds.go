package hdfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/systems"
)

// A DataNode JVM's own memory is mostly the classes it loads (Hadoop's,
// its libraries', the JDK's), not the DataNode's data. Java 17 can map
// classes from a class-data archive, shared by every JVM that maps it:
// the JDK ships one of its own classes, and an application archive of
// the classes a DataNode loads is made by running one DataNode with
// -XX:ArchiveClassesAtExit. gait makes it once per JDK, Hadoop jars and
// DataNode flags (the first cluster's first DataNode, stopped once
// registered, writes it) and every later DataNode maps it with
// -XX:SharedArchiveFile. The JVM checks an archive against its class
// path and JDK, and runs without it (as before) when they differ.
//
// Debian's JDK 17 maps archives at a random address by default and then
// rewrites their pointers, so each JVM dirties its own copy: 10 MiB for
// the JDK's archive alone. ArchiveRelocationMode=0 maps them where they
// were made, shared and clean (archiveFlags).
var archiveFlags = []string{"-XX:+UnlockDiagnosticVMOptions", "-XX:ArchiveRelocationMode=0"}

// archivePath is where the DataNodes' class-data archive of this driver's
// JDK, jars and DataNode flags is kept: under Home, named by a digest of
// what the JVM checks it against.
func (d *Driver) archivePath() (string, error) {
	digest, err := d.digest(strings.Join(append(append([]string(nil), JVMFlags...), d.DataNodeJVM...), " "))
	if err != nil {
		return "", err
	}
	return filepath.Join(d.Home, "cds", "datanode-"+digest+".jsa"), nil
}

// digest names what this driver's JDK and jars make, with salt: each
// file's path, size and time, so a new Hadoop or JDK gets a new name.
func (d *Driver) digest(salt string) (string, error) {
	h := sha256.New()
	java, err := filepath.EvalSymlinks(d.Java)
	if err != nil {
		return "", err
	}
	jars, err := filepath.Glob(filepath.Join(d.Home, "lib", "*.jar"))
	if err != nil {
		return "", err
	}
	for _, f := range append([]string{java, filepath.Join(filepath.Dir(java), "..", "lib", "server", "libjvm.so")}, jars...) {
		st, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d %d\n", f, st.Size(), st.ModTime().UnixNano())
	}
	fmt.Fprintln(h, salt)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// archive returns the DataNodes' archive if it exists, else "" and the
// path to make it at.
func (d *Driver) archive() (have, missing string) {
	if !d.ClassArchive {
		return "", ""
	}
	p, err := d.archivePath()
	if err != nil {
		return "", ""
	}
	if st, err := os.Stat(p); err == nil && st.Size() > 0 {
		return p, ""
	}
	return "", p
}

// trainArchive runs the DataNode m with -XX:ArchiveClassesAtExit until
// the NameNode counts it registered, stops it (the JVM writes the archive
// as it exits) and moves the archive into place. It is best effort: a
// DataNode without an archive works as before, so a failure is shown on
// the progress line and the start goes on.
func (c *Cluster) trainArchive(ctx context.Context, m *member, path string) {
	show := systems.Progress(ctx)
	show("making the DataNodes' class-data archive with the DataNode on " + m.host.Name())
	if err := c.train(ctx, m, path); err != nil {
		show(fmt.Sprintf("DataNodes' class-data archive not made: %v", err))
		return
	}
	show("DataNodes' class-data archive made: " + path)
}

// dumpGrace is how long a DataNode writing its archive may take to exit.
const dumpGrace = time.Minute

func (c *Cluster) train(ctx context.Context, m *member, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	defer os.Remove(tmp)
	f := c.fleet([]*member{m})
	f.Workers[0].Launch = func() error { return m.launch(c.d, "-XX:ArchiveClassesAtExit="+tmp) }
	f.Settled = nil
	err := f.Start(ctx)
	p := m.Current()
	if p == nil {
		return err
	}
	// SIGTERM, and time to write the archive: Stop's grace is seconds.
	if sp, ok := p.(interface{ Signal(syscall.Signal) error }); ok && !p.Exited() {
		sp.Signal(syscall.SIGTERM)
	}
	for end := time.Now().Add(dumpGrace); !p.Exited() && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
	}
	if stopErr := p.Stop(); err == nil && stopErr != nil {
		err = fmt.Errorf("stop the DataNode on %s: %w", m.host.Name(), stopErr)
	}
	if err != nil {
		return err
	}
	if st, err := os.Stat(tmp); err != nil || st.Size() == 0 {
		// The JVM says why on its standard output, beside the log.
		out := ""
		if lp, ok := p.(interface{ LogPath() string }); ok {
			out = strings.TrimSuffix(lp.LogPath(), ".stderr") + ".stdout"
		}
		return fmt.Errorf("the DataNode on %s wrote no archive; see %s%s", m.host.Name(), out, systems.LogTail(p))
	}
	return os.Rename(tmp, path)
}
