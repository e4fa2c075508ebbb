package load

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The parsers below read the workload as a user writes it, on the command
// line or in a scenario, and reject anything they do not fully understand.

var sizeUnits = []struct {
	suffix string
	bytes  int64
}{
	// Longest suffixes first, so "KiB" is not read as "B".
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
	{"B", 1},
}

// ParseSize reads a size in bytes: an integer with an optional unit B, KiB,
// MiB, GiB (powers of 1024) or kB, MB, GB (powers of 1000): 64B, 1KiB, 16KiB, 4096.
func ParseSize(s string) (int64, error) {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.bytes
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want a non-negative integer with an optional unit B, KiB, MiB, GiB, kB, MB or GB (e.g. 64B, 1KiB)", s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return n * mult, nil
}

// FormatSize writes n bytes the way ParseSize reads it, exactly: 1KiB, 1500B.
func FormatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		bytes  int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.bytes && n%u.bytes == 0 {
			return strconv.FormatInt(n/u.bytes, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// Rate is an open-loop arrival rate: either absolute (PerSecond) or a share
// of the maximum throughput (Share, in (0, 1]) to be measured by Calibrate.
type Rate struct {
	PerSecond float64
	Share     float64
}

func (r Rate) String() string {
	if r.Share > 0 {
		return strconv.FormatFloat(r.Share*100, 'g', -1, 64) + "%"
	}
	return strconv.FormatFloat(r.PerSecond, 'g', -1, 64) + "/s"
}

// ParseRate reads "2000/s" (requests per second) or "50%" (of the maximum
// throughput).
func ParseRate(s string) (Rate, error) {
	t := strings.TrimSpace(s)
	switch {
	case strings.HasSuffix(t, "/s"):
		v, err := strconv.ParseFloat(strings.TrimSuffix(t, "/s"), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return Rate{}, fmt.Errorf("rate %q: want a positive number of requests per second, like 2000/s", s)
		}
		return Rate{PerSecond: v}, nil
	case strings.HasSuffix(t, "%"):
		v, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
		if err != nil || !(v > 0) || v > 100 {
			return Rate{}, fmt.Errorf("rate %q: want a share of the maximum throughput above 0%% and at most 100%%, like 50%%", s)
		}
		return Rate{Share: v / 100}, nil
	}
	return Rate{}, fmt.Errorf("rate %q: want requests per second (2000/s) or a share of the maximum throughput (50%%)", s)
}

// ParseMix reads an operation mix such as "get:50,set:50" against the
// operations a system offers; an operation without a weight weighs 1.
func ParseMix(s string, ops []string) (Mix, error) {
	var m Mix
	for part := range strings.SplitSeq(s, ",") {
		name, weight, hasWeight := strings.Cut(strings.TrimSpace(part), ":")
		name = strings.TrimSpace(name)
		kind := slices.Index(ops, name)
		if kind < 0 {
			return nil, fmt.Errorf("mix %q: unknown operation %q (this system offers %s)", s, name, strings.Join(ops, ", "))
		}
		w := 1
		if hasWeight {
			var err error
			w, err = strconv.Atoi(strings.TrimSpace(weight))
			if err != nil || w <= 0 {
				return nil, fmt.Errorf("mix %q: weight of %s must be a positive integer, got %q", s, name, weight)
			}
		}
		if slices.ContainsFunc(m, func(e MixEntry) bool { return e.Name == name }) {
			return nil, fmt.Errorf("mix %q: %s appears twice", s, name)
		}
		m = append(m, MixEntry{Kind: uint8(kind), Name: name, Weight: w})
	}
	return m, nil
}

// ParseKeyDist reads "uniform", "zipf" or "zipf:S" with an exponent S > 1.
func ParseKeyDist(s string) (KeyDist, error) {
	switch t := strings.TrimSpace(s); {
	case t == "uniform":
		return KeyDist{}, nil
	case t == "zipf":
		return KeyDist{Zipf: true, S: DefaultZipfS}, nil
	case strings.HasPrefix(t, "zipf:"):
		v, err := strconv.ParseFloat(strings.TrimPrefix(t, "zipf:"), 64)
		if err != nil || !(v > 1) || math.IsInf(v, 0) {
			return KeyDist{}, fmt.Errorf("key distribution %q: the zipf exponent must be a number > 1, like zipf:1.1", s)
		}
		return KeyDist{Zipf: true, S: v}, nil
	}
	return KeyDist{}, fmt.Errorf("key distribution %q: want uniform, zipf or zipf:S", s)
}
