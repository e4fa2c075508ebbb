package cli

import (
	"fmt"
	"math"
	"time"

	"github.com/gait-dev/gait/internal/units"
	"github.com/spf13/pflag"
)

// durationFlag is a duration flag read by units.ParseDuration, so a bare
// number is refused with the same error as everywhere else in gait
// (`--timeout 10` would be seconds to one reader, milliseconds to another).
type durationFlag struct {
	d    *time.Duration
	text *string // as given, for errors about its value
}

// String writes the duration as given, or no duration as "0", which --help
// takes for "no default".
func (f durationFlag) String() string {
	switch {
	case *f.text != "":
		return *f.text
	case *f.d == 0:
		return "0"
	}
	return f.d.String()
}

func (f durationFlag) Type() string { return "duration" }

func (f durationFlag) Set(s string) error {
	sec, err := units.ParseDuration(s)
	if err != nil {
		return err
	}
	if math.Abs(sec) >= math.MaxInt64/1e9 {
		return fmt.Errorf("%q: longer than the 290 years a duration may be", s)
	}
	*f.d, *f.text = time.Duration(sec*1e9), s
	return nil
}

// durationVar defines a duration flag as pflag's DurationVar does.
func durationVar(fl *pflag.FlagSet, d *time.Duration, name string, value time.Duration, usage string) {
	*d = value
	fl.Var(durationFlag{d, new(string)}, name, usage)
}
