package verdict

import (
	"fmt"
	"slices"
	"strings"
)

// An experiment is repeated (the paper ran each 3-5 times) because one run
// on a shared machine is a coin toss near a threshold. Each repetition's
// step is judged against the same repetition's baseline; what follows sums
// the repetitions up without hiding how they differ.

// MarkNames are the verdicts by the paper's abbreviations, in the order
// tables list them.
var MarkNames = []string{"OL", "NL", "CL", "backlog"}

// Count is how many of a step's (or an experiment's) repetitions gave one
// verdict, of those that could judge it.
type Count struct {
	Mark  string `json:"mark"`
	Given int    `json:"given"`
	Of    int    `json:"of"`
	// Unjudged repetitions had too little to judge the verdict by; they
	// are not in Of.
	Unjudged int `json:"unjudged,omitempty"`
}

// Flips says the repetitions disagree: some gave the verdict, some not.
func (c Count) Flips() bool { return c.Given > 0 && c.Given < c.Of }

// String is "OL 3/3", "OL 2/3", and "OL 1/1" for a single repetition, so
// a table says how many runs stand behind a verdict; "NL 1/1 (1 not
// judged)" when a repetition could not judge it.
func (c Count) String() string { return c.Mark + " " + c.Ratio() }

// Ratio is "3/3", or "1/1 (1 not judged)".
func (c Count) Ratio() string {
	s := fmt.Sprintf("%d/%d", c.Given, c.Of)
	if c.Unjudged > 0 {
		s += fmt.Sprintf(" (%d not judged)", c.Unjudged)
	}
	return s
}

// Counts counts, for each verdict any repetition gave, how many gave it
// of the repetitions that could judge it.
func Counts(reps []Verdict) []Count {
	var out []Count
	for _, m := range MarkNames {
		c := Count{Mark: m}
		for _, v := range reps {
			switch mark := v.Mark(m); {
			case mark.On:
				c.Given++
				c.Of++
			case mark.Unjudged:
				c.Unjudged++
			default:
				c.Of++
			}
		}
		if c.Given > 0 {
			out = append(out, c)
		}
	}
	return out
}

// Strongest merges the counts of an experiment's steps: per verdict, the
// step whose repetitions gave it most often. An experiment shows operation
// limplock 3/3 when one of its factors did in every repetition, whatever
// the milder factors did.
func Strongest(steps [][]Count) []Count {
	best := map[string]Count{}
	for _, cs := range steps {
		for _, c := range cs {
			if b, ok := best[c.Mark]; !ok || c.Given*b.Of > b.Given*c.Of {
				best[c.Mark] = c
			}
		}
	}
	var out []Count
	for _, m := range MarkNames {
		if c, ok := best[m]; ok {
			out = append(out, c)
		}
	}
	return out
}

// CountText writes counts for a table: "OL 3/3 CL 2/3", or "-" for none.
func CountText(cs []Count) string {
	if len(cs) == 0 {
		return "-"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.String()
	}
	return strings.Join(parts, " ")
}

// Agreement compares counts with a set of marks (the paper's, or a
// regression scenario's prediction): "yes" when every repetition gave
// exactly those marks, "no" when the repetitions agree with each other
// and not with the marks, or when a mark is missing or extra in every
// repetition, and "flips" when the verdicts that decide it differ between
// repetitions. "" when there are no marks to compare with (want is nil).
func Agreement(want []string, got []Count) string {
	if want == nil {
		return ""
	}
	flips := false
	for _, m := range MarkNames {
		wanted := slices.Contains(want, m)
		given, of := 0, 0
		if i := slices.IndexFunc(got, func(c Count) bool { return c.Mark == m }); i >= 0 {
			given, of = got[i].Given, got[i].Of
		}
		switch {
		case given == 0 && wanted, given > 0 && given == of && !wanted:
			return "no"
		case given > 0 && given < of:
			flips = true
		}
	}
	if flips {
		return "flips"
	}
	return "yes"
}

// Spread is a value measured once per repetition: its median and range.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// SpreadOf sums values up; the median of an even count is the mean of the
// middle two.
func SpreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Spread{Median: med, Min: s[0], Max: s[n-1]}
}

// Ratio writes a spread of ratios: "12.3x", or "12.3x (8.10-15.2x)" when
// the repetitions differ.
func (s Spread) Ratio() string {
	if s.Min == s.Max {
		return fmt.Sprintf("%.2fx", s.Median)
	}
	return fmt.Sprintf("%.2fx (%.2f-%.2fx)", s.Median, s.Min, s.Max)
}
