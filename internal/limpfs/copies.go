package limpfs

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// copiesElsewhere returns, for each other mount namespace that holds a
// copy of the FUSE mount on path, one process in it. A process that makes
// a mount namespace of its own while the file system is mounted (`ip
// netns exec` does, to mount its own /sys) gets a copy of every mount; as
// long as one copy is left, the kernel keeps the FUSE connection, and so
// the server, alive after this namespace's mount is gone.
func copiesElsewhere(path string) ([]int, error) {
	m, ok, err := mountAt(path)
	if err != nil || !ok || (m.fstype != "fuse" && !strings.HasPrefix(m.fstype, "fuse.")) {
		return nil, err
	}
	own, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{own: true}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, p := range procs {
		ns, err := os.Readlink(filepath.Join(p, "ns", "mnt"))
		if err != nil || seen[ns] {
			continue // gone, or a namespace already looked at
		}
		seen[ns] = true
		if hasMount(filepath.Join(p, "mountinfo"), m.dev) {
			pid, _ := strconv.Atoi(filepath.Base(p))
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// hasMount reports whether a mountinfo file lists a mount of device dev
// (major:minor).
func hasMount(mountinfo, dev string) bool {
	f, err := os.Open(mountinfo)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 2 && fields[2] == dev {
			return true
		}
	}
	return false
}

// releaseCopies ends the FUSE connection when other mount namespaces hold
// copies of the mount, since go-fuse's Server.Unmount would otherwise wait
// for the processes holding them to end (for a server started with `ip
// netns exec`, forever). What was written is flushed first; the copies
// then fail with ENOTCONN, and this server ends.
func (f *FS) releaseCopies() error {
	pids, err := copiesElsewhere(f.Mountpoint)
	if err != nil || len(pids) == 0 {
		return err
	}
	if fd, err := unix.Open(f.Mountpoint, unix.O_RDONLY|unix.O_DIRECTORY, 0); err == nil {
		unix.Syncfs(fd)
		unix.Close(fd)
	}
	return abort(f.Mountpoint)
}

// unmountServer is go-fuse's Server.Unmount, which unmounts and waits for
// the connection to end. A copy of the mount made after releaseCopies
// looked (a process entering a mount namespace of its own just then) would
// keep it waiting: after a second the connection is aborted. Until the
// server has ended, its connection's number is still its own.
func (f *FS) unmountServer() error {
	conn, _, err := fuseConnection(f.Mountpoint)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- f.server.Unmount() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Second):
	}
	if conn != "" {
		abortConnection(conn)
	}
	return <-done
}
