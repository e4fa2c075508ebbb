package stats

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// SignificanceLevel is the p-value below which the paper calls a factor's
// influence significant (seeds/004, Appendix A.1, criterion C3: "p < 0.01").
const SignificanceLevel = 0.01

// Config is one configuration: the requests that share one value of every
// factor, summarised by Describe.
type Config struct {
	// Name labels the configuration in verdicts; Label derives one from
	// the factors when it is empty.
	Name string `json:"name"`
	// Factors maps each factor (clients, payload, ...) to this
	// configuration's level. A factor missing from the map has level "".
	Factors map[string]string `json:"factors"`
	Desc    Description       `json:"description"`
}

// Label returns Name, or "factor=level ..." in factor order when Name is empty.
func (c Config) Label() string {
	if c.Name != "" {
		return c.Name
	}
	keys := slices.Sorted(maps.Keys(c.Factors))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + c.Factors[k]
	}
	if len(parts) == 0 {
		return "all"
	}
	return strings.Join(parts, " ")
}

// Comparison is the cross-configuration analysis: criterion C3 per factor and
// the paper's headline check.
type Comparison struct {
	// Factors holds one entry per factor with at least two levels, sorted
	// by name; SingleLevel names the factors that have only one level and
	// so cannot be tested.
	Factors     []FactorEffect `json:"factors"`
	SingleLevel []string       `json:"single_level"`
	Headline    Headline       `json:"headline"`
}

// FactorEffect is criterion C3 for one factor: three one-way ANOVAs.
type FactorEffect struct {
	Factor string `json:"factor"`
	// Levels are the factor's distinct values, in numeric order when all
	// are numbers, otherwise in string order.
	Levels []string `json:"levels"`
	// Latency groups every request by this factor's level: does the
	// factor influence the (mean) latency? It is computed from each
	// configuration's Count, Mean and Std, exactly, without the samples.
	Latency ANOVA `json:"latency"`
	// P99 and Max group the configurations by level, one value per
	// configuration: does the factor influence the p99, the max? They need
	// more configurations than levels.
	P99 ANOVA `json:"p99"`
	Max ANOVA `json:"max"`
	// Verdict says the three results in words, e.g. "clients influences
	// the mean (p=1.2e-09 < 0.01); does not influence the p99 (p=0.41);
	// max not tested (each level has only one configuration)".
	Verdict string `json:"verdict"`
}

// Headline is the paper's summary check (seeds/004, §7 and Fig. 11): the
// largest p99/mean, and whether the upper bound of the 99% confidence
// interval of p99 stays within HeadlineFactor (25) × the mean.
type Headline struct {
	WorstP99OverMean float64 `json:"worst_p99_over_mean"`
	WorstP99Config   string  `json:"worst_p99_config"` // label of the configuration with the largest p99/mean
	// WorstUpperOverMean is the largest P99CI99.Upper / Mean among the
	// checked configurations, in WorstUpperConfig.
	WorstUpperOverMean float64 `json:"worst_upper_over_mean"`
	WorstUpperConfig   string  `json:"worst_upper_config"`
	// Checked counts the configurations that have a 99% interval for p99;
	// Unchecked lists those with too few samples (fewer than 528), which
	// the paper also excludes (§7, footnote 9).
	Checked   int      `json:"checked"`
	Unchecked []string `json:"unchecked"`
	// Exceeding lists the checked configurations whose upper bound is above
	// 25 × their mean.
	Exceeding []string `json:"exceeding"`
	// Holds is true when at least one configuration was checked and none
	// exceeds the bound.
	Holds   bool   `json:"holds"`
	Verdict string `json:"verdict"`
}

// Compare runs criterion C3 for every factor and the headline check over
// configs. Configurations with Count 0 are ignored. It reads only the
// Descriptions, so its memory does not grow with the number of requests.
func Compare(configs []Config) Comparison {
	configs = slices.DeleteFunc(slices.Clone(configs), func(c Config) bool { return c.Desc.Count == 0 })
	var cmp Comparison
	for _, f := range factorNames(configs) {
		levels := factorLevels(configs, f)
		if len(levels) < 2 {
			cmp.SingleLevel = append(cmp.SingleLevel, f)
			continue
		}
		cmp.Factors = append(cmp.Factors, factorEffect(configs, f, levels))
	}
	cmp.Headline = headline(configs)
	return cmp
}

func factorEffect(configs []Config, factor string, levels []string) FactorEffect {
	index := make(map[string]int, len(levels))
	for i, l := range levels {
		index[l] = i
	}
	requests := make([]Moments, len(levels))
	p99s := make([][]float64, len(levels))
	maxes := make([][]float64, len(levels))
	for _, c := range configs {
		i := index[c.Factors[factor]]
		requests[i] = requests[i].Merge(c.Desc.Moments())
		p99s[i] = append(p99s[i], c.Desc.P99)
		maxes[i] = append(maxes[i], c.Desc.Max)
	}
	e := FactorEffect{
		Factor:  factor,
		Levels:  levels,
		Latency: OneWayANOVAMoments(requests),
		P99:     perConfigANOVA(p99s),
		Max:     perConfigANOVA(maxes),
	}
	e.Verdict = factor + " " + strings.Join([]string{
		verdictPart("mean", e.Latency),
		verdictPart("p99", e.P99),
		verdictPart("max", e.Max),
	}, "; ")
	return e
}

// perConfigANOVA is OneWayANOVA with a reason that speaks of configurations.
func perConfigANOVA(groups [][]float64) ANOVA {
	a := OneWayANOVA(groups)
	if !a.OK && a.DFBetween > 0 && a.DFWithin < 1 {
		a.Reason = "each level has only one configuration"
	}
	return a
}

func verdictPart(what string, a ANOVA) string {
	switch {
	case !a.OK:
		return fmt.Sprintf("%s not tested (%s)", what, a.Reason)
	case a.P < SignificanceLevel:
		return fmt.Sprintf("influences the %s (p=%.2g < %g)", what, a.P, SignificanceLevel)
	default:
		return fmt.Sprintf("does not influence the %s (p=%.2g)", what, a.P)
	}
}

func headline(configs []Config) Headline {
	var h Headline
	for _, c := range configs {
		d := c.Desc
		if h.WorstP99Config == "" || d.P99OverMean > h.WorstP99OverMean {
			h.WorstP99OverMean, h.WorstP99Config = d.P99OverMean, c.Label()
		}
		if !d.P99CI99.OK {
			h.Unchecked = append(h.Unchecked, c.Label())
			continue
		}
		h.Checked++
		upper := ratio(d.P99CI99.Upper, d.Mean)
		if h.WorstUpperConfig == "" || upper > h.WorstUpperOverMean {
			h.WorstUpperOverMean, h.WorstUpperConfig = upper, c.Label()
		}
		if d.P99CI99.Upper > HeadlineFactor*d.Mean {
			h.Exceeding = append(h.Exceeding, c.Label())
		}
	}
	h.Holds = h.Checked > 0 && len(h.Exceeding) == 0
	h.Verdict = headlineVerdict(h, len(configs))
	return h
}

func headlineVerdict(h Headline, total int) string {
	if total == 0 {
		return "no configuration has samples"
	}
	s := fmt.Sprintf("largest p99/mean is %.3g (%s); ", h.WorstP99OverMean, h.WorstP99Config)
	switch {
	case h.Checked == 0:
		s += "no configuration has enough samples (528) for a 99% bound on p99"
	case len(h.Exceeding) > 0:
		s += fmt.Sprintf("the upper 99%% bound of p99 exceeds %d x the mean in %d of %d checked configurations: %s",
			HeadlineFactor, len(h.Exceeding), h.Checked, someOf(h.Exceeding))
	default:
		s += fmt.Sprintf("the upper 99%% bound of p99 is within %d x the mean in all %d checked configurations (at most %.3g x, %s)",
			HeadlineFactor, h.Checked, h.WorstUpperOverMean, h.WorstUpperConfig)
	}
	if h.Checked > 0 && len(h.Unchecked) > 0 {
		s += fmt.Sprintf("; %d configurations have too few samples for a 99%% bound: %s",
			len(h.Unchecked), someOf(h.Unchecked))
	}
	return s
}

// headlineNames is how many configurations a headline sentence names
// before it only counts the rest: a sentence is read, a list is looked up.
const headlineNames = 3

// someOf names the first few of labels and counts the others.
func someOf(labels []string) string {
	if len(labels) <= headlineNames {
		return strings.Join(labels, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(labels[:headlineNames], ", "), len(labels)-headlineNames)
}

func factorNames(configs []Config) []string {
	seen := map[string]bool{}
	for _, c := range configs {
		for k := range c.Factors {
			seen[k] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// factorLevels returns the distinct levels of factor, numerically ordered
// when every level is a number.
func factorLevels(configs []Config, factor string) []string {
	seen := map[string]bool{}
	for _, c := range configs {
		seen[c.Factors[factor]] = true
	}
	levels := slices.Sorted(maps.Keys(seen))
	nums := make(map[string]float64, len(levels))
	for _, l := range levels {
		v, ok := levelQuantity(l)
		if !ok {
			return levels
		}
		nums[l] = v
	}
	slices.SortStableFunc(levels, func(a, b string) int { return cmp.Compare(nums[a], nums[b]) })
	return levels
}

// unitScale orders levels written with a unit, like 64B < 1KiB < 16KiB or
// 500us < 2ms, the way users write sizes and durations in factors.
var unitScale = map[string]float64{
	"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
	"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "%": 1,
}

// levelQuantity reads a level as a number with an optional unit.
func levelQuantity(level string) (float64, bool) {
	i := strings.IndexFunc(level, func(r rune) bool { return !strings.ContainsRune("0123456789.+-eE", r) })
	if i < 0 {
		i = len(level)
	}
	v, err := strconv.ParseFloat(level[:i], 64)
	scale, known := unitScale[strings.TrimSpace(level[i:])]
	if err != nil || !known {
		return 0, false
	}
	return v * scale, true
}
