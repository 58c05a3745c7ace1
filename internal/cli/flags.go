package cli

import (
	"bytes"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// NewFlagSet returns a flag set named name that returns its errors rather
// than printing them or exiting: [ParseFlags] reports them.
func NewFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// ParseFlags parses args with fs (see [Parse], which opts are passed to)
// and returns the names of the flags given.
// On -h it writes usage and fs's flags to help (unless help is nil) and
// returns flag.ErrHelp, or the write's error where help cannot take them
// (stdout redirected to /dev/full: a help not printed is a failure). A bad flag, or an argument left over (every
// argument is a flag), is a *UsageError whose message starts with prefix.
func ParseFlags(fs *flag.FlagSet, args []string, help io.Writer, usage, prefix string, opts ...Option) (map[string]bool, error) {
	if err := Parse(fs, args, opts...); errors.Is(err, flag.ErrHelp) {
		if help != nil {
			if werr := PrintUsage(help, fs, usage); werr != nil {
				return nil, werr
			}
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

// PrintUsage writes usage, then fs's flags with their defaults, to w, and
// returns the write's error.
func PrintUsage(w io.Writer, fs *flag.FlagSet, usage string) error {
	var b bytes.Buffer
	fs.SetOutput(&b)
	b.WriteString(usage)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	_, err := b.WriteTo(w)
	return err
}

// Option is an option of [Parse] and [ParseFlags].
type Option int

// Once makes a flag given twice an error (invalid value "8" for flag -eps:
// given twice (first "1"): give each flag once), where the flag package
// silently keeps the last: a command line with -eps 1 ... -eps 8 is
// ambiguous, and whoever reads it may take the first.
const Once Option = 1

// Parse parses args with fs as fs.Parse does, except that a float64 flag
// (defined with fs.Float64Var) refuses a value that is nonzero but below
// the float64 range, such as 1e-400: strconv.ParseFloat rounds it to 0
// without an error, and 0 often means "none" or "the default" (-clip 0,
// -eta-ind 0), so the flag would silently change meaning. The error is
// the flag package's: invalid value "1e-400" for flag -clip: nonzero but
// below the float64 range. An integer flag (int, int64, uint, uint64)
// reads decimal digits only, where the flag package reads Go's literals
// (-R 0x10 is 16, -R 010 octal 8): a base prefix or an underscore is an
// error, and a leading 0 is decimal (-R 010 is 10). With [Once], a flag
// given twice is an error.
func Parse(fs *flag.FlagSet, args []string, opts ...Option) error {
	defer wrap(fs, opts)()
	return suggest(fs, fs.Parse(args))
}

// synonyms are the names one dpmf command gives a flag that another names
// otherwise (mfsolve -R, ofl -rounds; mfsolve -o, ofl -out), and a long
// form newcomers type for a short one.
var synonyms = map[string][]string{
	"rounds":  {"R"},
	"R":       {"rounds"},
	"out":     {"o"},
	"o":       {"out"},
	"output":  {"o", "out"},
	"epsilon": {"eps"},
}

// suggest adds to the flag package's error for an unknown flag ("flag
// provided but not defined: -rounds") the flag of fs that was probably
// meant ("; did you mean -R?"): one that differs only in case, a
// synonym, the one flag the name begins, or the one flag within two
// edits of a name of four or more letters that begins with the same letter
// (ofl server -reps is not -eps). An unknown flag, or an argument of bad
// flag syntax, that holds a character that is not printable (a line break,
// an escape) is quoted (strconv.Quote), so that the error stays one line
// and shows it. Any other error, and an unknown flag with no such match,
// is returned as it is.
func suggest(fs *flag.FlagSet, err error) error {
	const unknown, syntax = "flag provided but not defined: -", "bad flag syntax: "
	if arg, ok := strings.CutPrefix(fmt.Sprint(err), syntax); ok && !printable(arg) {
		return errors.New(syntax + strconv.Quote(arg))
	}
	name, ok := strings.CutPrefix(fmt.Sprint(err), unknown)
	if err == nil || !ok || name == "" {
		return err
	}
	if !printable(name) {
		// The flag package writes the name as given: -$'a\nb' made an
		// error of two lines, and a command's one-line error lost the
		// line break. No flag has such a name.
		return errors.New(strings.TrimSuffix(unknown, "-") + strconv.Quote("-"+name))
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	one := func(match func(string) bool) string {
		var found []string
		for _, n := range names {
			if n != name && match(n) {
				found = append(found, n)
			}
		}
		if len(found) == 1 {
			return found[0]
		}
		return ""
	}
	guess := one(func(n string) bool { return strings.EqualFold(n, name) })
	for _, syn := range synonyms[name] {
		if guess == "" && fs.Lookup(syn) != nil {
			guess = syn
		}
	}
	if guess == "" && len(name) >= 3 {
		guess = one(func(n string) bool { return strings.HasPrefix(n, name) })
	}
	if guess == "" && len(name) >= 4 {
		guess = one(func(n string) bool { return n[0] == name[0] && editDistance(n, name) <= 2 })
	}
	if guess == "" {
		return err
	}
	return fmt.Errorf("%w; did you mean -%s?", err, guess)
}

// printable reports whether s is UTF-8 of printable characters
// (unicode.IsPrint, the ASCII space included) only, which an error can
// show as it is.
func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) })
}

// editDistance returns the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev = cur
	}
	return prev[len(b)]
}

// ParseInterspersed is [Parse] for a command whose flags and other
// arguments may come in any order (ofl reproduce fig4 -quick tuning -out
// DIR): it returns the arguments that are not flags, in their order. With
// [Once], a flag given twice anywhere on the command line is an error.
func ParseInterspersed(fs *flag.FlagSet, args []string, opts ...Option) ([]string, error) {
	defer wrap(fs, opts)()
	var rest []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return rest, suggest(fs, err)
		}
		if args = fs.Args(); len(args) > 0 {
			rest = append(rest, args[0])
			args = args[1:]
		}
	}
	return rest, nil
}

// wrap replaces fs's flag values by the checking ones of [Parse] and
// returns the function that puts the originals back.
func wrap(fs *flag.FlagSet, opts []Option) (restore func()) {
	once := slices.Contains(opts, Once)
	orig := map[*flag.Flag]flag.Value{}
	fs.VisitAll(func(f *flag.Flag) {
		orig[f] = f.Value
		if g, ok := f.Value.(flag.Getter); ok {
			switch g.Get().(type) {
			case float64:
				f.Value = strictFloat{f.Value}
			case int, int64:
				f.Value = decimalInt{Value: f.Value}
			case uint, uint64:
				f.Value = decimalInt{Value: f.Value, unsigned: true}
			}
		}
		if once {
			f.Value = &onceValue{Value: f.Value}
		}
	})
	return func() {
		// The flag package prints the defaults and type names of its own
		// values only.
		for f, v := range orig {
			f.Value = v
		}
	}
}

// onceValue is a flag value that refuses to be set twice ([Once]).
type onceValue struct {
	flag.Value
	first *string
}

// Set implements flag.Value.
func (o *onceValue) Set(s string) error {
	if o.first != nil {
		return fmt.Errorf("given twice (first %q): give each flag once", *o.first)
	}
	if err := o.Value.Set(s); err != nil {
		return err
	}
	o.first = &s
	return nil
}

// IsBoolFlag reports whether the flag is a boolean flag (-json, without a
// value), as the flag package asks of its values.
func (o *onceValue) IsBoolFlag() bool {
	b, ok := o.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// decimalInt is an integer flag value that reads decimal digits only. The
// flag package reads Go's integer literals: -R 010 was 8 rounds (octal),
// -R 0x10 16 and -R 1_000 1000; a command line is not Go source. Text
// that is no integer (-R abc, -R 1e3) and a sign on an unsigned flag
// (-seed -1) are refused with what the flag wants, not the flag
// package's bare "parse error".
type decimalInt struct {
	flag.Value
	unsigned bool // a uint or uint64 flag
}

// Set implements flag.Value.
func (f decimalInt) Set(s string) error {
	digits := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		if _, err := strconv.ParseUint(digits, 0, 64); err == nil || errors.Is(err, strconv.ErrRange) {
			// A literal the flag package would read (0x10, 0o7,
			// 0b1, 1_000), not decimal digits.
			return errors.New("want a decimal integer (digits with an optional sign; not 0x, 0o, 0b or underscores)")
		}
		if f.unsigned {
			return errors.New("want a decimal integer >= 0")
		}
		return errors.New("want a decimal integer")
	}
	if f.unsigned {
		if strings.HasPrefix(s, "-") {
			return errors.New("want a decimal integer >= 0")
		}
		s = digits // strconv.ParseUint takes no sign, not even +
	}
	if t := strings.TrimLeft(digits, "0"); t != digits {
		// A leading 0 makes the flag package read octal: the
		// number without it is the decimal one written.
		s = strings.TrimSuffix(s, digits) + cmp.Or(t, "0")
	}
	return f.Value.Set(s)
}

// strictFloat is a float64 flag value that refuses an underflow to 0, and
// says what is wrong in [ParseFloat]'s words ("not a number", "out of the
// float64 range"), as the flags that [Float64DownVar] defines do, not the
// flag package's "parse error".
type strictFloat struct{ flag.Value }

// Set implements flag.Value.
func (f strictFloat) Set(s string) error {
	if _, err := ParseFloat(s); err != nil {
		return err
	}
	return f.Value.Set(s)
}

// nonzero reports whether s, which strconv.ParseFloat accepts, is the
// text of a nonzero number.
func nonzero(s string) bool {
	b, _, err := big.ParseFloat(s, 0, 64, big.ToNearestEven)
	if err == nil && b.Sign() != 0 {
		return true
	}
	// big.ParseFloat refuses an exponent beyond its own range
	// (1e-9999999999, which strconv rounds to 0), and rounds one just
	// inside it to 0 without an error (1e-700000000): the number is
	// nonzero if a digit of its mantissa is.
	m, digits, exp := strings.TrimLeft(s, "+-"), "123456789", "eE"
	if len(m) > 1 && m[0] == '0' && (m[1] == 'x' || m[1] == 'X') {
		m, digits, exp = m[2:], "123456789abcdefABCDEF", "pP"
	}
	if i := strings.IndexAny(m, exp); i >= 0 {
		m = m[:i]
	}
	return strings.ContainsAny(m, digits)
}

// ParseFloat parses s as a command-line float64: ParseFloat's syntax,
// with errors that say what is wrong in words ("not a number", "out of
// the float64 range"), and a value that is nonzero but below the float64
// range refused rather than rounded to 0.
func ParseFloat(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, errors.New("out of the float64 range")
	case err != nil:
		return 0, errors.New("not a number")
	case v == 0 && nonzero(s):
		return 0, errors.New("nonzero but below the float64 range")
	}
	return v, nil
}

// Float64DownVar defines a float64 flag read by [ParseFloatDown], for a
// privacy target such as delta that must not be read as larger than
// written (fs.Float64Var rounds a subnormal to the nearest float64, up to
// twice the number written). Its help prints the default as
// fs.Float64Var's does.
func Float64DownVar(fs *flag.FlagSet, p *float64, name string, value float64, usage string) {
	*p = value
	fs.Var(&downFloat{p}, name, usage)
}

// downFloat is the flag value of [Float64DownVar].
type downFloat struct{ p *float64 }

// String implements flag.Value (a zero value, which the flag package
// makes to compare with the default, prints 0).
func (f *downFloat) String() string {
	if f == nil || f.p == nil {
		return "0"
	}
	return strconv.FormatFloat(*f.p, 'g', -1, 64)
}

// Set implements flag.Value.
func (f *downFloat) Set(s string) error {
	v, err := ParseFloatDown(s)
	if err != nil {
		return err
	}
	*f.p = v
	return nil
}

// Get implements flag.Getter.
func (f *downFloat) Get() any { return *f.p }

// ParseFloatDown is [ParseFloat] for a privacy target such as delta, which
// must not be read as larger than written: a positive value below the
// normal float64 range (2.2e-308), where the nearest float64 can be up to
// twice the number written (2.5e-324 is read as 4.9e-324), is read as the
// largest float64 not above it, and one with no positive float64 below it
// is an error. Above 2.2e-308 it is ParseFloat's nearest float64, within a
// relative 1.1e-16 of the number written.
func ParseFloatDown(s string) (float64, error) {
	v, err := ParseFloat(s)
	if err != nil || !(v > 0 && v < 0x1p-1022) {
		return v, err
	}
	// 64 bits rounded toward zero: below 2^-1022 a float64 has at most 52
	// significant bits, so it exceeds the number written if and only if it
	// exceeds this truncation.
	b, _, perr := big.ParseFloat(s, 0, 64, big.ToZero)
	if perr == nil && new(big.Float).SetFloat64(v).Cmp(b) > 0 {
		v = math.Nextafter(v, 0)
	}
	if v == 0 {
		return 0, errors.New("positive but below the smallest float64 (4.9e-324); rounding it up would weaken the target")
	}
	return v, nil
}
