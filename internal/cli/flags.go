package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// NewFlagSet returns a flag set named name that returns its errors rather
// than printing them or exiting: [ParseFlags] reports them.
func NewFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// ParseFlags parses args with fs and returns the names of the flags given.
// On -h it writes usage and fs's flags to help (unless help is nil) and
// returns flag.ErrHelp. A bad flag, or an argument left over (every
// argument is a flag), is a *UsageError whose message starts with prefix.
func ParseFlags(fs *flag.FlagSet, args []string, help io.Writer, usage, prefix string) (map[string]bool, error) {
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		if help != nil {
			fs.SetOutput(help)
			fmt.Fprint(help, usage)
			fs.PrintDefaults()
		}
		return nil, err
	} else if err != nil {
		return nil, Usagef("%s%v", prefix, err)
	}
	if fs.NArg() > 0 {
		return nil, Usagef("%sunexpected argument %q (flags start with -)", prefix, fs.Arg(0))
	}
	set := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set, nil
}
