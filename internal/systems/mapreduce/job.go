package mapreduce

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
)

// Ops are the operations of this driver's clients: a job, whichever the
// scenario's config names (Jobs).
var Ops = []string{"job"}

// Jobs are the jobs an op can run.
var Jobs = []string{"wordcount", "loadgen"}

// The main classes of the jobs: Hadoop's examples and its test jar's
// GenericMRLoadGenerator (map output and reduce output each a share of
// their input, as the SWIM workloads' jobs are described).
const (
	examplesClass = "org.apache.hadoop.examples.ExampleDriver"
	loadgenClass  = "org.apache.hadoop.mapreduce.GenericMRLoadGenerator"
	fsShellClass  = "org.apache.hadoop.fs.FsShell"
)

// inputDir is where the jobs' text is in HDFS; outputs go under outDir.
const (
	inputDir = "/gait-input"
	outDir   = "/gait-out"
)

// jobArgs is the main class and arguments of job n.
func (d *Driver) jobArgs(n int) []string {
	out := fmt.Sprintf("%s/%d", outDir, n)
	name := fmt.Sprintf("-Dmapreduce.job.name=gait-%s-%d", d.Job, n)
	if d.Job == "loadgen" {
		// Every map output record goes to the reduces (the shuffle
		// the paper's slow NICs sit on), a tenth of what they get
		// is written out.
		return []string{loadgenClass, name, "-r", strconv.Itoa(d.Reduces), "-keepmap", "100", "-keepred", "10",
			"-indir", inputDir, "-outdir", out,
			"-inFormat", "org.apache.hadoop.mapreduce.lib.input.TextInputFormat",
			"-outKey", "org.apache.hadoop.io.LongWritable", "-outValue", "org.apache.hadoop.io.Text"}
	}
	return []string{examplesClass, "wordcount", name, inputDir, out}
}

// Words writes n bytes of text of random words, a line of 12 at a time,
// from a vocabulary of 2^18 words of 3 to 10 letters: varied enough that
// WordCount's combiner keeps most of a map's output, so a job shuffles
// about as much as it reads (as the paper's WordCount over real text),
// rather than a few thousand counts.
func Words(n int64, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]byte, 0, n)
	word := make([]byte, 0, 10)
	for col := 0; int64(len(out)) < n; col++ {
		w := r.Uint64() & (1<<18 - 1) // the word's number fixes its letters
		word = word[:0]
		for l := 3 + int(w%8); len(word) < l; w = w*6364136223846793005 + 1442695040888963407 {
			word = append(word, 'a'+byte((w>>33)%26))
		}
		out = append(out, word...)
		if col%12 == 11 {
			out = append(out, '\n')
		} else {
			out = append(out, ' ')
		}
	}
	out = out[:n]
	out[n-1] = '\n'
	return out
}

// Counters are what Hadoop's job client prints of a finished job.
type Counters struct {
	App       string // its YARN application
	Succeeded bool
	Splits    int              // its maps: "number of splits:N"
	Values    map[string]int64 // each counter by its name ("Launched map tasks")
}

var (
	submittedRE = regexp.MustCompile(`Submitted application (application_\d+_\d+)`)
	splitsRE    = regexp.MustCompile(`number of splits:(\d+)`)
	counterRE   = regexp.MustCompile(`^\t\t([^=\t]+)=(\d+)$`)
)

// ParseJobOutput reads the job client's log.
func ParseJobOutput(out string) Counters {
	c := Counters{Values: map[string]int64{}}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, "\r")
		if m := submittedRE.FindStringSubmatch(line); m != nil {
			c.App = m[1]
		}
		if m := splitsRE.FindStringSubmatch(line); m != nil {
			c.Splits, _ = strconv.Atoi(m[1])
		}
		if strings.Contains(line, " completed successfully") {
			c.Succeeded = true
		}
		if m := counterRE.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseInt(m[2], 10, 64)
			c.Values[m[1]] = v
		}
	}
	return c
}

// shuffleErrors are the counters of Hadoop's "Shuffle Errors" group.
var shuffleErrors = []string{"BAD_ID", "CONNECTION", "IO_ERROR", "WRONG_LENGTH", "WRONG_MAP", "WRONG_REDUCE"}

// jobTotals adds up what the jobs done so far reported.
type jobTotals struct {
	Jobs, Failed int64
	// Extra is the attempts launched beyond one a task: speculative
	// attempts and retries; Killed the attempts killed (the losers of a
	// speculation, mostly).
	ExtraMaps, ExtraReduces, KilledMaps, KilledReduces int64
	ShuffleBytes, ShuffleErrors                        int64
}

// add counts one job's counters, reduces being the reduces it asked for.
func (t *jobTotals) add(c Counters, reduces int) {
	t.Jobs++
	if !c.Succeeded {
		t.Failed++
		return
	}
	v := c.Values
	t.ExtraMaps += max(0, v["Launched map tasks"]-int64(c.Splits))
	t.ExtraReduces += max(0, v["Launched reduce tasks"]-int64(reduces))
	t.KilledMaps += v["Killed map tasks"]
	t.KilledReduces += v["Killed reduce tasks"]
	t.ShuffleBytes += v["Reduce shuffle bytes"]
	for _, e := range shuffleErrors {
		t.ShuffleErrors += v[e]
	}
}
