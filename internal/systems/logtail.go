package systems

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// tailLines is how many lines of a log an error quotes, tailWidth how
// many bytes of one line.
const (
	tailLines = 15
	tailWidth = 240
	tailRead  = 1 << 20 // the end of a log read for its tail
)

// LogTail returns the last meaningful lines of p's output for an error
// message (see Meaningful), or a pointer to the host's output when p
// does not say where its output is.
func LogTail(p Process) string {
	var where, text string
	var err error
	switch lp := p.(type) {
	case interface{ LogPath() string }:
		where = lp.LogPath()
		text, err = ReadEnd(where, tailRead)
	case LogReader:
		where, text, err = lp.ReadLog()
	default:
		return " (see the host's output)"
	}
	if err != nil {
		return fmt.Sprintf(" (log: %v)", err)
	}
	lines := Meaningful(text, tailLines)
	if len(lines) == 0 {
		return "; " + where + " says nothing"
	}
	return "; last lines of " + where + ":\n  " + strings.Join(lines, "\n  ")
}

// LogReader is a process whose log is on another machine: ReadLog
// returns where the log is and its end.
type LogReader interface {
	ReadLog() (where, text string, err error)
}

// ReadEnd reads at most the last n bytes of the file at path, from the
// first whole line.
func ReadEnd(path string, n int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	off := max(0, st.Size()-n)
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil {
		return "", err
	}
	if off > 0 { // the first line is cut; drop it
		if i := strings.IndexByte(string(b), '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b), nil
}

// accessLog matches an HTTP server's line for a request it answered:
// the readiness checks' own requests, which say nothing of a failure.
var accessLog = regexp.MustCompile(`"(GET|HEAD|POST|PUT) \S+ HTTP/[0-9.]+" [0-9]{3} `)

// Meaningful picks the last n lines of a server's log that say what it
// did: it leaves out blank lines, start-up banners (Hadoop's STARTUP_MSG
// block with its class path of thousands of bytes) and HTTP access-log
// lines (the readiness checks' own requests), keeps the
// first three frames of each stack trace and counts the rest, and clips
// any line longer than tailWidth bytes, saying by how much.
func Meaningful(text string, n int) []string {
	var out []string
	inBanner, frames := false, 0
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		trim := strings.TrimSpace(line)
		switch {
		case trim == "":
			continue
		case strings.HasPrefix(trim, "/*****"):
			inBanner = true
			continue
		case inBanner:
			if strings.HasSuffix(trim, "*****/") {
				inBanner = false
			}
			continue
		case strings.Contains(line, "STARTUP_MSG:"), strings.HasPrefix(trim, "classpath =") || strings.HasPrefix(trim, "classpath="),
			accessLog.MatchString(line):
			continue
		case strings.HasPrefix(trim, "at ") && strings.HasPrefix(line, "\t"):
			frames++
			switch {
			case frames <= 3:
			case frames == 4:
				out = append(out, "\t...")
				continue
			default:
				continue
			}
		default:
			frames = 0
		}
		out = append(out, clipLine(line))
	}
	return out[max(0, len(out)-n):]
}

func clipLine(line string) string {
	if len(line) <= tailWidth {
		return line
	}
	return fmt.Sprintf("%s... (%d bytes more)", line[:tailWidth], len(line)-tailWidth)
}
