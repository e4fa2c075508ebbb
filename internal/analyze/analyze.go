// Package analyze is gait analyze: how predictable a set of latency
// distributions is, by the criteria of "Middleware, Fault-Tolerance and the
// Magical 1%" (seeds/004, §2-4, §7, Appendix A.1). Per configuration it
// applies C1 (max > 10 x mean) and C2 (the 3σ outliers), the haircut and a
// distribution-free interval for p99; across configurations, C3 (one-way
// ANOVA of each factor) and the paper's headline check (p99 within 25 x the
// mean). It renders the result as a terminal table, JSON or an HTML report.
package analyze

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gait-dev/gait/internal/latency"
	"github.com/gait-dev/gait/internal/stats"
)

// SchemaVersion is the version of the JSON document; it changes whenever a
// field changes meaning or disappears (docs/analyze.md).
const SchemaVersion = 1

// Result is the whole analysis. Latencies are in seconds. No number is ever
// NaN: a value that cannot be computed is null, with a reason beside it.
type Result struct {
	SchemaVersion int    `json:"schema_version"`
	LatencyUnit   string `json:"latency_unit"`
	// QuantileMethod names the quantile definition of every percentile.
	QuantileMethod string          `json:"quantile_method"`
	Configurations []Configuration `json:"configurations"`
	// Factors is criterion C3, one entry per factor with two or more
	// levels; SingleLevelFactors names the others.
	Factors            []FactorEffect `json:"factors"`
	SingleLevelFactors []string       `json:"single_level_factors"`
	Headline           Headline       `json:"headline"`
	// Bound is the latency bound of Options.Bound in seconds; omitted
	// without one.
	Bound *float64 `json:"bound,omitempty"`
	// CommonFactors are the factor=level pairs every configuration shares,
	// which each configuration's Label leaves out.
	CommonFactors []string `json:"common_factors"`

	// sorted holds each configuration's latencies, sorted, for the figures.
	sorted [][]float64
}

// Configuration is the per-configuration analysis.
type Configuration struct {
	Name string `json:"name"`
	// Label is Name without the factors every configuration shares: what
	// tells it from the others, for legends, tables and the headline.
	Label   string            `json:"label"`
	Factors map[string]string `json:"factors"`
	Source  string            `json:"source"`
	Note    string            `json:"note,omitempty"`
	// Warning says why the latencies are not the server's alone (the
	// load generator fell behind its schedule); omitted when there is none.
	Warning string  `json:"warning,omitempty"`
	Count   int     `json:"count"`
	Mean    float64 `json:"mean"`
	Std     float64 `json:"std"`
	Min     float64 `json:"min"`
	P50     float64 `json:"p50"`
	P90     float64 `json:"p90"`
	P99     float64 `json:"p99"`
	P999    float64 `json:"p99_9"`
	Max     float64 `json:"max"`
	C1      C1      `json:"c1"`
	C2      C2      `json:"c2"`
	Haircut Haircut `json:"haircut"`
	// P99OverMean is null when the mean is 0.
	P99OverMean *float64 `json:"p99_over_mean"`
	P99CI95     Interval `json:"p99_ci95"`
	P99CI99     Interval `json:"p99_ci99"`
	// WithinBound counts the requests with latency at most Result.Bound, and
	// ShareWithinBound is their share of Count: the measured SLA. Both
	// are omitted without a bound.
	WithinBound      *int     `json:"within_bound,omitempty"`
	ShareWithinBound *float64 `json:"share_within_bound,omitempty"`
}

// C1 is criterion C1: the maximum is more than 10 x the mean.
type C1 struct {
	Unpredictable bool     `json:"unpredictable"`
	MaxOverMean   *float64 `json:"max_over_mean"`
}

// C2 is criterion C2: samples above mean + 3 standard deviations.
type C2 struct {
	Threshold float64 `json:"threshold"`
	Count     int     `json:"count"`
	Share     float64 `json:"share"`
	// LargestOverMean and LargestZ describe the largest outlier; null
	// when there is none.
	LargestOverMean *float64 `json:"largest_over_mean"`
	LargestZ        *float64 `json:"largest_z"`
}

// Haircut is the distribution without its top 1% of samples.
type Haircut struct {
	Removed int     `json:"removed"`
	Mean    float64 `json:"mean"`
	Max     float64 `json:"max"`
}

// Interval is a distribution-free confidence interval for p99; the numbers
// are null when OK is false, and Reason says why.
type Interval struct {
	Confidence float64  `json:"confidence"`
	OK         bool     `json:"ok"`
	Lower      *float64 `json:"lower"`
	Upper      *float64 `json:"upper"`
	LowerRank  *int     `json:"lower_rank"`
	UpperRank  *int     `json:"upper_rank"`
	Coverage   *float64 `json:"coverage"`
	Reason     string   `json:"reason,omitempty"`
}

// FactorEffect is criterion C3 for one factor.
type FactorEffect struct {
	Factor  string   `json:"factor"`
	Levels  []string `json:"levels"`
	Latency ANOVA    `json:"latency"`
	P99     ANOVA    `json:"p99"`
	Max     ANOVA    `json:"max"`
	Verdict string   `json:"verdict"`
}

// ANOVA is one one-way analysis of variance. Influences is whether the factor
// is significant at p < 0.01; it and the statistics are null when the test
// could not be run, and Reason says why.
type ANOVA struct {
	OK         bool     `json:"ok"`
	F          *float64 `json:"f"`
	DFBetween  *int     `json:"df_between"`
	DFWithin   *int     `json:"df_within"`
	P          *float64 `json:"p"`
	Influences *bool    `json:"influences"`
	Reason     string   `json:"reason,omitempty"`
}

// Headline is the paper's summary check: is p99's upper 99% confidence bound
// within 25 x the mean in every configuration?
type Headline struct {
	Limit                   float64  `json:"limit"`
	WorstP99OverMean        float64  `json:"worst_p99_over_mean"`
	WorstP99Configuration   string   `json:"worst_p99_configuration"`
	WorstUpperOverMean      *float64 `json:"worst_upper_over_mean"`
	WorstUpperConfiguration string   `json:"worst_upper_configuration,omitempty"`
	Checked                 int      `json:"checked"`
	Unchecked               []string `json:"unchecked"`
	Exceeding               []string `json:"exceeding"`
	Holds                   bool     `json:"holds"`
	Verdict                 string   `json:"verdict"`
}

// Options are the optional parts of an analysis.
type Options struct {
	// Bound, when positive, is a latency bound in seconds: each configuration
	// then reports how many of its requests met it (an SLA such as "99.9%
	// within 10 ms").
	Bound float64
}

// Run analyzes the configurations. It sorts each configuration's latencies
// in place and keeps them for the figures; configurations without samples
// are skipped.
func Run(configs []latency.Configuration, opt Options) Result {
	res := Result{
		SchemaVersion:  SchemaVersion,
		LatencyUnit:    "s",
		QuantileMethod: "linear (numpy default, Hyndman-Fan type 7)",
		Configurations: []Configuration{},
		Factors:        []FactorEffect{},
	}
	configs = slices.DeleteFunc(slices.Clone(configs), func(c latency.Configuration) bool { return len(c.Latencies) == 0 })
	labels, common := labelsOf(configs)
	res.CommonFactors = nonNil(common)
	names := make(map[string]string, len(configs)) // by label
	var cmp []stats.Config
	for i, c := range configs {
		d := stats.Describe(c.Latencies)
		conf := configuration(c, d)
		conf.Label, names[labels[i]] = labels[i], c.Name
		if opt.Bound > 0 {
			within := stats.CountWithin(c.Latencies, opt.Bound)
			share := float64(within) / float64(len(c.Latencies))
			conf.WithinBound, conf.ShareWithinBound = &within, &share
		}
		res.Configurations = append(res.Configurations, conf)
		res.sorted = append(res.sorted, c.Latencies)
		cmp = append(cmp, stats.Config{Name: labels[i], Factors: c.Factors, Desc: d})
	}
	comparison := stats.Compare(cmp)
	for _, f := range comparison.Factors {
		res.Factors = append(res.Factors, FactorEffect{Factor: f.Factor, Levels: levelNames(f.Levels),
			Latency: anova(f.Latency), P99: anova(f.P99), Max: anova(f.Max), Verdict: f.Verdict})
	}
	res.SingleLevelFactors = nonNil(comparison.SingleLevel)
	res.Headline = headline(comparison.Headline, names)
	if n := len(res.warnings()); n > 0 {
		res.Headline.Verdict += fmt.Sprintf("; but in %d of %d configurations the load generator fell behind "+
			"its schedule, so their tail is the generator's, not the server's (see the warning)", n, len(res.Configurations))
	}
	if opt.Bound > 0 {
		res.Bound = &opt.Bound
	}
	return res
}

// NoLevel names the level of a configuration that lacks a factor or has an
// empty value for it (a CSV row's empty field, a trace beside run
// directories), which would otherwise be listed as a blank.
const NoLevel = "(none)"

func levelNames(levels []string) []string {
	out := make([]string, len(levels))
	for i, l := range levels {
		if l == "" {
			l = NoLevel
		}
		out[i] = l
	}
	return out
}

func configuration(c latency.Configuration, d stats.Description) Configuration {
	out := Configuration{
		Name: c.Name, Factors: c.Factors, Source: c.Source, Note: c.Note, Warning: c.Warning,
		Count: d.Count, Mean: d.Mean, Std: d.Std, Min: d.Min,
		P50: d.P50, P90: d.P90, P99: d.P99, P999: d.P999, Max: d.Max,
		C1:          C1{Unpredictable: d.C1, MaxOverMean: overMean(d.MaxOverMean, d.Mean)},
		C2:          C2{Threshold: d.Outliers.Threshold, Count: d.Outliers.Count, Share: d.Outliers.Share},
		Haircut:     Haircut{Removed: d.Haircut.Removed, Mean: d.Haircut.Mean, Max: d.Haircut.Max},
		P99OverMean: overMean(d.P99OverMean, d.Mean),
		P99CI95:     interval(d.P99CI95),
		P99CI99:     interval(d.P99CI99),
	}
	if out.Factors == nil {
		out.Factors = map[string]string{}
	}
	if d.Outliers.Count > 0 {
		out.C2.LargestOverMean = overMean(d.Outliers.LargestOverMean, d.Mean)
		if d.Std > 0 {
			out.C2.LargestZ = &d.Outliers.LargestZ
		}
	}
	return out
}

// overMean returns a ratio to the mean, or nil when the mean is 0 (stats
// reports such ratios as 0, which JSON readers would take literally).
func overMean(v, mean float64) *float64 {
	if mean == 0 {
		return nil
	}
	return &v
}

func interval(iv stats.Interval) Interval {
	out := Interval{Confidence: iv.Confidence, OK: iv.OK, Reason: iv.Reason}
	if iv.OK {
		out.Lower, out.Upper, out.Coverage = &iv.Lower, &iv.Upper, &iv.Coverage
		out.LowerRank, out.UpperRank = &iv.LowerRank, &iv.UpperRank
	}
	return out
}

func anova(a stats.ANOVA) ANOVA {
	out := ANOVA{OK: a.OK, Reason: a.Reason}
	if a.OK {
		influences := a.P < stats.SignificanceLevel
		out.F, out.P, out.Influences = &a.F, &a.P, &influences
		out.DFBetween, out.DFWithin = &a.DFBetween, &a.DFWithin
	}
	return out
}

// headline is h, whose sentence names configurations by their short
// labels, with its fields naming them in full (names, by label), as
// configurations[].name does.
func headline(h stats.Headline, names map[string]string) Headline {
	full := func(labels []string) []string {
		out := make([]string, len(labels))
		for i, l := range labels {
			out[i] = names[l]
		}
		return out
	}
	out := Headline{
		Limit:                 stats.HeadlineFactor,
		WorstP99OverMean:      h.WorstP99OverMean,
		WorstP99Configuration: names[h.WorstP99Config],
		Checked:               h.Checked,
		Unchecked:             full(h.Unchecked),
		Exceeding:             full(h.Exceeding),
		Holds:                 h.Holds,
		Verdict:               h.Verdict,
	}
	if h.Checked > 0 {
		out.WorstUpperOverMean = &h.WorstUpperOverMean
		out.WorstUpperConfiguration = names[h.WorstUpperConfig]
	}
	return out
}

// labelsOf returns each configuration's label, its factors that differ
// between configurations (so a legend leads with what tells the curves
// apart), and the factor=level pairs they all share. A configuration
// whose label would be empty (a single one, or one without factors)
// keeps its name.
func labelsOf(configs []latency.Configuration) (labels, common []string) {
	levels := map[string]map[string]bool{}
	for _, c := range configs {
		for k := range c.Factors {
			levels[k] = map[string]bool{}
		}
	}
	for _, c := range configs {
		for k := range levels {
			v, ok := c.Factors[k]
			if !ok {
				v = "\x00" // missing differs from every level
			}
			levels[k][v] = true
		}
	}
	var varying []string
	for _, k := range slices.Sorted(maps.Keys(levels)) {
		switch {
		case len(levels[k]) == 1:
			common = append(common, k+"="+configs[0].Factors[k])
		case !slices.ContainsFunc(varying, func(v string) bool { return sameLevels(configs, v, k) }):
			varying = append(varying, k)
		}
	}
	labels = make([]string, len(configs))
	for i, c := range configs {
		var parts []string
		for _, k := range varying {
			if v, ok := c.Factors[k]; ok {
				parts = append(parts, k+"="+v)
			}
		}
		labels[i] = strings.Join(parts, " ")
		if labels[i] == "" || len(configs) == 1 {
			labels[i] = c.Name
		}
	}
	if len(configs) == 1 {
		common = nil
	}
	return labels, common
}

// sameLevels says whether factors a and b split the configurations alike,
// level for level (a scenario's factor and slowdown): a label needs only
// one of them.
func sameLevels(configs []latency.Configuration, a, b string) bool {
	ab, ba := map[string]string{}, map[string]string{}
	for _, c := range configs {
		va, oka := c.Factors[a]
		vb, okb := c.Factors[b]
		if oka != okb {
			return false
		}
		if w, seen := ab[va]; seen && w != vb {
			return false
		}
		if w, seen := ba[vb]; seen && w != va {
			return false
		}
		ab[va], ba[vb] = vb, va
	}
	return true
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
