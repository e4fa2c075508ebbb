// Package leftover finds what a gait command left on this machine, for the
// tests that interrupt or kill one: network namespaces, links and their
// qdiscs, FUSE mounts, cgroups, processes, files under /dev/shm, /run/gait
// and the temporary directory, and whatever is in the directories the test
// names (a run's output directory). The machine is shared: other runs may
// come and go while a test runs, so a Watch counts only what appeared after
// it was taken and is the command's: its testbed runs (noted while it runs,
// from their state files in one of Dirs), its processes (which carry the
// watch's tag), and whatever lies in Dirs.
package leftover

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gait-dev/gait/internal/procstat"
	"github.com/vishvananda/netlink"
)

// stateDir is testbed.DefaultStateDir (this package must not import the
// testbed it checks).
const stateDir = "/run/gait"

// A Watch is what was on the machine before a command started, and how to
// tell the command's own things from others'.
type Watch struct {
	// Dirs must end up holding nothing but what Allow matches (their
	// entries, recursively).
	Dirs []string
	// Allow matches paths relative to one of Dirs that may stay (a
	// finished run's directory, scenario.yaml), as filepath.Match does.
	Allow []string
	// Names are words in the names of the command's scratch entries in
	// /dev/shm or the temporary directory that carry no run id (a
	// scenario's name).
	Names []string

	tag    string
	before map[string]bool
	runs   map[string]bool // ids of the command's testbed runs
}

// Take notes what is on the machine now.
func Take(dirs ...string) *Watch {
	w := &Watch{Dirs: dirs, tag: rand.Text(), runs: map[string]bool{}}
	w.before = map[string]bool{}
	for _, t := range w.traces() {
		w.before[t.what] = true
	}
	return w
}

// Env is the environment variable a command started by the test must get
// (appended to os.Environ()): every process that inherits it is the
// command's, however it was started.
func (w *Watch) Env() string { return "GAIT_LEFTOVER=" + w.tag }

// Note notes the testbed runs whose state files are in one of Dirs now (a
// command given --state-dir DIR keeps them there while it runs): what
// carries their ids is the command's. Call it while the command runs.
func (w *Watch) Note() {
	for _, d := range w.Dirs {
		states, _ := filepath.Glob(filepath.Join(d, "*.json"))
		for _, s := range states {
			if m := runID.FindStringSubmatch(s); m != nil {
				w.runs[m[1]] = true
			}
		}
	}
}

// Run lists what of testbed run id is on the machine now (its namespaces,
// links, qdiscs, mounts, cgroups, files), and whatever lies in dirs (its
// state directory, when not the default): for a test that knows the id.
func Run(id string, dirs ...string) []string {
	w := &Watch{Dirs: dirs}
	var left []string
	for _, t := range w.traces() {
		if t.id == id || t.ours {
			left = append(left, t.what)
		}
	}
	return append(left, w.inDirs()...)
}

// Scan lists what is left: each thing by kind and name.
func (w *Watch) Scan() []string {
	var left []string
	for _, t := range w.traces() {
		switch {
		case w.before[t.what]:
		case t.id != "" && !w.runs[t.id]: // another run's
		case t.id == "" && !t.ours && !w.named(t.what): // another test's, as far as can be told
		default:
			left = append(left, t.what)
		}
	}
	return append(left, w.inDirs()...)
}

// trace is one thing gait makes: what it is, the run id its name carries
// (if any), and whether it is surely the command's.
type trace struct {
	what string
	id   string
	ours bool
}

// runID finds a testbed run id in a name: g<id>-h0, gait-<id>-..., <id>.json.
var runID = regexp.MustCompile(`(?:^|/)(?:g|gait-)?([0-9a-f]{5})(?:-|\.json$|\.ref$)`)

func traceOf(what, name string, ours bool) trace {
	t := trace{what: what, ours: ours}
	if m := runID.FindStringSubmatch(name); m != nil {
		t.id = m[1]
	}
	return t
}

func (w *Watch) traces() []trace {
	var ts []trace
	netns, _ := filepath.Glob("/run/netns/g*")
	for _, n := range netns {
		ts = append(ts, traceOf("namespace "+filepath.Base(n), filepath.Base(n), false))
	}
	links, _ := netlink.LinkList()
	for _, l := range links {
		name := l.Attrs().Name
		if !runID.MatchString(name) || !strings.HasPrefix(name, "g") {
			continue
		}
		ts = append(ts, traceOf("link "+name, name, false))
		qs, _ := netlink.QdiscList(l)
		for _, q := range qs {
			if q.Type() == "tbf" || q.Type() == "htb" {
				ts = append(ts, traceOf("qdisc "+q.Type()+" on "+name, name, false))
			}
		}
	}
	ts = append(ts, w.mounts()...)
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/gait/g*")
	cg2, _ := filepath.Glob("/sys/fs/cgroup/gait/g*")
	for _, c := range slices.Concat(cgroups, cg2) {
		ts = append(ts, traceOf("cgroup "+c, filepath.Base(c), false))
	}
	files, _ := filepath.Glob("/dev/shm/gait-*")
	tmp, _ := filepath.Glob(filepath.Join(os.TempDir(), "gait-*"))
	states, _ := filepath.Glob(filepath.Join(stateDir, "*.json"))
	refs, _ := filepath.Glob(filepath.Join(stateDir, "*.ref"))
	for _, f := range slices.Concat(files, tmp, states, refs) {
		ts = append(ts, traceOf("file "+f, filepath.Base(f), false))
	}
	records, _ := filepath.Glob(filepath.Join(stateDir, "emulate", "*.json"))
	for _, r := range records {
		b, _ := os.ReadFile(r)
		ours := slices.ContainsFunc(w.Dirs, func(d string) bool { return bytes.Contains(b, []byte(d)) }) // of a mount in Dirs
		ts = append(ts, trace{what: "file " + r, ours: ours})
	}
	for _, pid := range w.processes() {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		ts = append(ts, trace{what: fmt.Sprintf("process %d (%s)", pid, bytes.TrimSpace(comm)), ours: true})
	}
	return ts
}

// mounts lists FUSE mounts of gait's (limpfs) and whatever is mounted in
// one of Dirs or on a gait name.
func (w *Watch) mounts() []trace {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var ts []trace
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		pre, post, _ := strings.Cut(sc.Text(), " - ")
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 2 {
			continue
		}
		point := a[4]
		under := slices.ContainsFunc(w.Dirs, func(d string) bool { return point == d || strings.HasPrefix(point, d+"/") })
		if !under && !strings.HasPrefix(b[0], "fuse.limpfs") && !strings.HasPrefix(point, "/run/netns/g") {
			continue
		}
		ts = append(ts, traceOf("mount "+point+" ("+b[0]+")", point, under))
	}
	return ts
}

// processes lists the processes that carry the watch's tag, zombies left out.
func (w *Watch) processes() []int {
	want := []byte(w.Env())
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, p := range procs {
		pid, _ := strconv.Atoi(filepath.Base(p))
		if pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil || !slices.ContainsFunc(bytes.Split(env, []byte{0}), func(v []byte) bool { return bytes.Equal(v, want) }) {
			continue
		}
		if procstat.Running(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func (w *Watch) named(what string) bool {
	return slices.ContainsFunc(w.Names, func(n string) bool { return strings.Contains(what, n) })
}

// inDirs lists the entries of Dirs that Allow does not match.
func (w *Watch) inDirs() []string {
	var left []string
	for _, d := range w.Dirs {
		filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err != nil || path == d {
				return nil
			}
			rel, _ := filepath.Rel(d, path)
			for _, a := range w.Allow {
				if ok, _ := filepath.Match(a, rel); ok {
					if e.IsDir() {
						return filepath.SkipDir
					}
					return nil
				}
				if e.IsDir() && leads(a, rel) {
					return nil // a parent of what may stay
				}
			}
			left = append(left, "file "+path)
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		})
	}
	return left
}

// leads reports whether the pattern's first components match dir: what
// the pattern allows may lie inside dir.
func leads(pattern, dir string) bool {
	p, d := strings.Split(pattern, "/"), strings.Split(dir, "/")
	if len(p) <= len(d) {
		return false
	}
	ok, _ := filepath.Match(strings.Join(p[:len(d)], "/"), dir)
	return ok
}
