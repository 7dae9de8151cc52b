package cli

import (
	"flag"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/job"
)

// strictFloatFlag is a float flag that refuses text float64 cannot hold:
// NaN, ±Inf, a magnitude past float64's range (1e400), and a non-zero
// number so small that it rounds to 0 (1e-400). strconv.ParseFloat turns
// the last silently into 0, which most float flags read as "the default".
// register wraps every *ucli.Float64Flag of every command in one; help,
// configuration files and flags after the arguments see the flag as
// before, through the methods it embeds.
type strictFloatFlag struct{ *ucli.Float64Flag }

// Apply registers the flag on set as urfave/cli does, then checks every
// value the set parses for it (command line, configuration, flags after
// the arguments).
func (f strictFloatFlag) Apply(set *flag.FlagSet) error {
	if err := f.Float64Flag.Apply(set); err != nil {
		return err
	}
	for _, n := range f.Names() {
		if fl := set.Lookup(n); fl != nil {
			fl.Value = strictFloat{fl.Value}
		}
	}
	return nil
}

// strictFloat is a flag.Value that refuses what job.ParseFiniteFloat
// refuses.
type strictFloat struct{ flag.Value }

func (v strictFloat) Set(s string) error {
	if _, err := job.ParseFiniteFloat(s); err != nil { // the flag package names the flag and s
		return err
	}
	return v.Value.Set(s)
}

// strictFloats wraps every *ucli.Float64Flag of c in a strictFloatFlag.
func strictFloats(c *ucli.Command) {
	for i, f := range c.Flags {
		if ff, ok := f.(*ucli.Float64Flag); ok {
			c.Flags[i] = strictFloatFlag{ff}
		}
	}
}
