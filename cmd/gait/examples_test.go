package main

// The docs' examples are tested: every command a user may paste from
// README.md, docs/ or a --help runs here as written and must succeed (or fail
// with the error the docs show). docs/examples.md is the convention this
// test reads; an example too long for make test is marked there, visibly,
// and listed by this test instead of run.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// GAIT_DOCTEST_LIST=1 lists the examples it would run instead of running them.

// exampleCPU bounds the CPU time of one example (a block, a transcript
// line, a command's --help examples), its children's included: one that
// needs more is marked long. CPU time, not wall time, since make test
// runs on a shared machine whose load would make a wall clock lie;
// exampleTimeout only stops one that hangs.
const (
	exampleCPU     = 20 * time.Second
	exampleTimeout = 3 * time.Minute
)

// Markers, as the first line of a block or, in --help, the comment line
// right above a command.
const (
	markLong  = "# long:"
	markNeeds = "# needs:"
)

// example is one thing to run: a script of one or more commands.
type example struct {
	where  string // file:line, or "gait CMD --help"
	script string
	// wantErr, when set, is the error line the docs show: the script must
	// fail and print it on standard error.
	wantErr string
	mark    string // markLong or markNeeds when not run
	reason  string
	given   string // the prelude that gives what a needs mark asks for
}

// givens are what the test can give an example marked "# needs: ...",
// by the start of the need's text: the example then runs in network and
// mount namespaces of its own (its server on 127.0.0.1 and its mount at
// /mnt/big meet none of the machine's), after a prelude that starts what
// it needs.
var givens = []struct{ need, prelude string }{
	{"a Redis server at 127.0.0.1:6379", redisPrelude},
	{"an emulating mount at /mnt/big", mountPrelude},
	{"a store an emulating mount used", mountPrelude},
}

const redisPrelude = `ip link set lo up
redis-server --port 6379 --save '' --appendonly no --logfile '' > /dev/null 2>&1 &
until redis-cli -p 6379 ping > /dev/null 2>&1; do sleep 0.1; done
`

// mountPrelude mounts a store at /var/tmp/big on /mnt/big, both on
// tmpfs private to the example, and unmounts it when the example ends.
const mountPrelude = `mount --make-rprivate /
mount -t tmpfs gait-doctest /mnt
mount -t tmpfs gait-doctest /var/tmp
mkdir /mnt/big
gait emulate mount /mnt/big --store /var/tmp/big > /mnt/.log 2>&1 &
given=$!
trap 'kill $given; wait $given || true' EXIT
until grep -q mounted /mnt/.log; do kill -0 $given; sleep 0.1; done
`

// withGiven gives ex the prelude its needs mark asks for, if the test can.
func withGiven(ex example) example {
	if ex.mark != markNeeds {
		return ex
	}
	for _, g := range givens {
		if strings.HasPrefix(ex.reason, g.need) {
			ex.given = g.prelude
		}
	}
	return ex
}

func TestDocExamples(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "gait"), ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build gait: %v\n%s", err, out)
	}
	var all []example
	pages, err := docPages(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		ex, err := pageExamples(root, p)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ex...)
	}
	all = append(all, helpExamples(t, filepath.Join(bin, "gait"))...)

	list := os.Getenv("GAIT_DOCTEST_LIST") != ""
	var run, long, needs, given int
	for _, ex := range all {
		ex = withGiven(ex)
		switch {
		case ex.given != "":
			given++
			t.Logf("needs, given by the test: %s: %s", ex.where, ex.reason)
		case ex.mark == markLong:
			long++
			t.Logf("long, not run: %s: %s", ex.where, ex.reason)
			continue
		case ex.mark == markNeeds:
			needs++
			t.Logf("needs, not run: %s: %s", ex.where, ex.reason)
			continue
		}
		run++
		if list {
			t.Logf("run: %s:\n%s", ex.where, ex.script)
			continue
		}
		t.Run(ex.where, func(t *testing.T) { runExample(t, root, bin, ex) })
	}
	t.Logf("docs examples: %d run (%d of them marked needs, given by the test), %d marked long, %d marked needs (%d pages)",
		run, given, long, needs, len(pages))
	if run == 0 {
		t.Error("no example found: the extraction is broken")
	}
}

// docPages are README.md and every page under docs/, new ones included,
// but for docs/results/: records of measurement, whose commands reproduce
// a study (minutes to hours), not examples to paste.
func docPages(root string) ([]string, error) {
	pages := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "results" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			pages = append(pages, rel)
		}
		return nil
	})
	return pages, err
}

// pageExamples reads a page's ```sh blocks (each one script) and the
// "$ COMMAND" lines of its plain blocks (transcripts: the lines after a
// command are its output).
func pageExamples(root, page string) ([]example, error) {
	b, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		return nil, err
	}
	var out []example
	var block []string
	var lang string
	var start int
	inBlock := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fence := strings.HasPrefix(strings.TrimSpace(line), "```")
		switch {
		case fence && !inBlock:
			inBlock, lang, start, block = true, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "```")), n+1, nil
		case fence:
			inBlock = false
			where := fmt.Sprintf("%s:%d", page, start)
			switch lang {
			case "sh":
				out = append(out, marked(example{where: where, script: strings.Join(block, "\n")}, block))
			case "":
				out = append(out, transcript(page, start, block)...)
			}
		case inBlock:
			block = append(block, line)
		}
	}
	return out, sc.Err()
}

// marked sets ex's mark from the first line of its block.
func marked(ex example, block []string) example {
	for _, l := range block {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		for _, m := range []string{markLong, markNeeds} {
			if strings.HasPrefix(l, m) {
				ex.mark, ex.reason = m, strings.TrimSpace(strings.TrimPrefix(l, m))
			}
		}
		break
	}
	return ex
}

// transcript reads the "$ COMMAND" lines of a plain block; a block marked
// on its first line marks all of them.
func transcript(page string, start int, block []string) []example {
	var out []example
	mark := marked(example{}, block)
	for i := 0; i < len(block); i++ {
		if !strings.HasPrefix(block[i], "$ ") {
			continue
		}
		ex := mark
		ex.where = fmt.Sprintf("%s:%d", page, start+i)
		cmd := strings.TrimPrefix(block[i], "$ ")
		for strings.HasSuffix(cmd, "\\") && i+1 < len(block) {
			i++
			cmd += "\n" + block[i]
		}
		ex.script = cmd
		if i+1 < len(block) && strings.HasPrefix(block[i+1], "gait: ") {
			ex.wantErr = block[i+1]
		}
		out = append(out, ex)
	}
	return out
}

// helpExamples reads the Examples of every command's --help, each
// command's as one script; a "# long:" or "# needs:" comment marks the
// commands after it, up to the next blank or comment line, as one example.
func helpExamples(t *testing.T, gait string) []example {
	var out []example
	var walk func(path []string)
	walk = func(path []string) {
		help, err := exec.Command(gait, append(slices.Clone(path), "--help")...).Output()
		if err != nil {
			t.Fatalf("gait %s --help: %v", strings.Join(path, " "), err)
		}
		where := "gait " + strings.Join(append(slices.Clone(path), "--help"), " ")
		var script []string
		// group holds the commands under a mark, up to the next blank
		// or comment line: one example, run as one script.
		var group *example
		flush := func() {
			if group != nil {
				out = append(out, *group)
				group = nil
			}
		}
		for _, cmd := range helpSection(string(help), "Examples:") {
			switch {
			case cmd == "":
				flush()
			case strings.HasPrefix(cmd, "#"):
				flush()
				if ex := marked(example{}, []string{cmd}); ex.mark != "" {
					group = &ex
				}
			case group != nil:
				if group.where == "" {
					group.where = where + ": " + firstLine(cmd)
				}
				group.script = strings.TrimPrefix(group.script+"\n"+cmd, "\n")
			default:
				script = append(script, cmd)
			}
		}
		flush()
		if len(script) > 0 {
			out = append(out, example{where: where, script: strings.Join(script, "\n")})
		}
		for _, line := range helpSection(string(help), "Available Commands:") {
			name, _, _ := strings.Cut(line, " ")
			if name != "" && name != "help" && name != "completion" {
				walk(append(slices.Clone(path), name))
			}
		}
	}
	walk(nil)
	return out
}

// helpSection returns the lines of a --help section, unindented, with
// backslash-continued lines joined.
func helpSection(help, title string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(help, "\n") {
		switch {
		case line == title:
			in = true
		case in && line != "" && !strings.HasPrefix(line, " "):
			return out
		case in:
			line = strings.TrimSpace(line)
			if n := len(out); n > 0 && strings.HasSuffix(out[n-1], "\\") {
				out[n-1] += "\n  " + line
				continue
			}
			out = append(out, line)
		}
	}
	return out
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// runExample runs ex's script with bash in a scratch directory that mirrors
// the repository root, with the built gait as bin/gait and as gait.
func runExample(t *testing.T, root, bin string, ex example) {
	if os.Geteuid() != 0 && regexp.MustCompile(`(^|[\s;|&(])sudo\s`).MatchString(ex.script) {
		t.Skip("needs root")
	}
	argv := []string{"bash", "-e", "-c", ex.script}
	if ex.given != "" {
		if os.Geteuid() != 0 {
			t.Skip("needs root, to give the example what it needs")
		}
		argv = append([]string{"unshare", "--net", "--mount", "--fork"}, "bash", "-e", "-c", ex.given+ex.script)
	}
	dir := scratch(t, root, bin)
	ctx, cancel := context.WithTimeout(context.Background(), exampleTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(dir, "bin")+":"+filepath.Join(dir, ".shim")+":"+os.Getenv("PATH"))
	// Its own process group, so that what it leaves running ends with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second // a daemon it started may hold its output open
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	tail := func() string { return lastLines(stdout.String(), 5) + lastLines(stderr.String(), 10) }
	var cpu time.Duration
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	t.Logf("%v CPU", cpu.Round(10*time.Millisecond))
	switch {
	case ctx.Err() != nil:
		t.Errorf("still running after %v: mark it %q with how long it takes (docs/examples.md)\n%s", exampleTimeout, markLong, ex.script)
	case cpu > exampleCPU:
		t.Errorf("took %v of CPU, more than the %v an example may: mark it %q with how long it takes (docs/examples.md)\n%s",
			cpu.Round(time.Second), exampleCPU, markLong, ex.script)
	case ex.wantErr != "" && err == nil:
		t.Errorf("succeeded, but the docs show the error %q\n%s\n%s", ex.wantErr, ex.script, tail())
	case ex.wantErr != "" && !strings.Contains(stderr.String(), ex.wantErr):
		t.Errorf("failed, but not with the error the docs show\nwant %q\n%s\n%s", ex.wantErr, ex.script, tail())
	case ex.wantErr == "" && err != nil:
		t.Errorf("%v\n%s\n%s", err, ex.script, tail())
	}
}

// scratch makes a directory that holds links to the repository's files
// (scenarios, testdata, scripts, ...), so an example reads them where the
// docs say, while what it writes (runs/, out/, report.html) stays there.
func scratch(t *testing.T, root, bin string) string {
	dir := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch e.Name() {
		case "bin", "runs", "out", ".git":
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(bin, filepath.Join(dir, "bin")); err != nil {
		t.Fatal(err)
	}
	// The test runs as root, as make test does: sudo runs the command as
	// is (with its VAR=value assignments, without its options).
	shim := filepath.Join(dir, ".shim")
	sudo := "#!/bin/sh\nwhile [ \"${1#-}\" != \"$1\" ]; do shift; done\nexec env \"$@\"\n"
	if err := os.MkdirAll(shim, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shim, "sudo"), []byte(sudo), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}
