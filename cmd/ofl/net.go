package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/experiment"
	"github.com/dpmf/dpmf/fednet"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

const serverUsage = `Usage: ofl server -state DIR [-listen ADDR] [TLS flags] [run flags] [-data SRC [-split S] [-data-sha256 HEX]]

Serves one run of the online federated optimiser to learners over gRPC
(see docs/distributed.md): it waits for the learners' updates, adds the
noise, writes every released model to DIR and serves it. Killed and
restarted with the same flags, it resumes from the last released round.
The run flags (-algo, -learners, -rounds, -tau, -dim, -eta, ...) are those
of ofl; -seed seeds the noise (for experiments: without it the noise key
comes from crypto/rand and is kept in DIR/noise.key). With
-secure-aggregation [-threshold T] [-colluders c] every round runs the
secure-aggregation protocol: the server learns only the sum of the
surviving learners' quantized updates if it colludes with at most c
learners (2T > n + c), and each phase needs T learners (-min-learners is
T).
With -data (and -split) and -seed, the server deals the data as the
learners do, only to record its source and SHA-256 in DIR/run.json, for
ofl evaluate to check; without -seed, -data-sha256 HEX gives that digest
(with -seed, it must be the one dealt); without -data, the run records no
data.

Flags:
`

const learnerUsage = `Usage: ofl learner -server ADDR -id I -seed S [-state DIR] [-colluders C] [TLS flags] [data flags]

Runs learner I of a networked run: it joins the server, takes the run's
configuration from it, and computes its updates from its own data. With
the same -data and -seed as the server's simulation, learner I's stream is
learner I's of ofl.

Flags:
`

// simulationOnly are ofl's flags that mean nothing to a server. (The
// server takes the data flags -data and -split only to record the data's
// digest in the run's plan: see parseServerArgs.)
var simulationOnly = []string{"reps", "workers", "eval-every", "out", "json", "quiet"}

// tlsFlags are the transport flags of both roles.
type tlsFlags struct {
	insecure      bool
	nonLoopback   bool // -insecure-nonloopback
	cert, key, ca string
	serverName    string
}

// serverFlags parses the server's command line into the run configuration
// (validated by ofl's own parser) and the network options (opt: the state
// directory, timeouts and minimum learners).
type serverFlags struct {
	run config
	// data is whether -data was given: the server then deals the data as
	// the learners do and records it in the run's plan.
	data bool
	// dataSHA is -data-sha256: the SHA-256 of the data set the learners
	// deal, as the operator gives it (lower-case hexadecimal; "" when not
	// given). It is recorded with -data's source where the server cannot
	// deal the data itself (no -seed), and must agree with the digest it
	// deals where it can.
	dataSHA string
	listen  string
	// maxConns is -max-connections (0: the default for the learners).
	maxConns int
	tls      tlsFlags
	opt      fednet.ServerOptions
}

func parseServerArgs(args []string, help io.Writer) (serverFlags, error) {
	var s serverFlags
	fs := cli.NewFlagSet("ofl server")
	given := runFlags(fs, "seed of the noise, as ofl's (for experiments; default: a noise key from crypto/rand, kept in the state directory's noise.key)", simulationOnly...)
	fs.StringVar(&s.opt.Dir, "state", "", "state directory: released models, the run's description and the noise key (required)")
	fs.StringVar(&s.dataSHA, "data-sha256", "", "SHA-256 of the data set the learners deal (`HEX`, 64 hexadecimal digits; with -data, recorded in the run's plan: needs no -seed, and must agree with the data -data and -seed deal when -seed is given)")
	fs.StringVar(&s.listen, "listen", "127.0.0.1:7070", "address to listen on")
	fs.IntVar(&s.maxConns, "max-connections", 0, "most connections served at once; further ones wait until one closes (0: "+strconv.Itoa(fednet.ConnectionsPerLearner)+" per learner plus "+strconv.Itoa(fednet.SpareConnections)+")")
	fs.BoolVar(&s.tls.insecure, "insecure", false, "serve without TLS (loopback tests only: refused on a -listen address that is not loopback)")
	fs.BoolVar(&s.tls.nonLoopback, insecureNonLoopback, false, "with -insecure, listen on an address that is not loopback all the same (plaintext: anyone on the network reads and alters the models and updates)")
	fs.StringVar(&s.tls.cert, "tls-cert", "", "PEM certificate chain of the server")
	fs.StringVar(&s.tls.key, "tls-key", "", "PEM private key of the server")
	fs.StringVar(&s.tls.ca, "client-ca", "", "PEM CA of the learners' certificates: require mutual TLS, learner I's certificate for CommonName learner-I")
	fs.DurationVar(&s.opt.RoundTimeout, "round-timeout", 60*time.Second, "how long a round waits for updates (the first round: from the first learner's call)")
	fs.DurationVar(&s.opt.JoinTimeout, "join-timeout", 0, "how long to wait for the first learner before stopping (0: without limit)")
	fs.IntVar(&s.opt.MinLearners, "min-learners", 0, "least updates a round may close with (0: all learners); with fewer after -round-timeout the server stops")
	fs.DurationVar(&s.opt.QuorumGrace, "quorum-grace", 3*time.Second, "with -min-learners below -learners: how long a round waits for the others once -min-learners updates are in")
	fs.DurationVar(&s.opt.Linger, "linger", 10*time.Second, "how long to serve the final model after the last round")
	if _, err := cli.ParseFlags(fs, args, help, serverUsage, "", cli.Once); err != nil {
		return s, err
	}
	// Validate the run flags with ofl's parser.
	g := given()
	var simArgs []string
	for _, k := range slices.Sorted(maps.Keys(g)) {
		simArgs = append(simArgs, "-"+k+"="+g[k])
	}
	run, err := parseArgs(simArgs)
	if err != nil {
		return s, err
	}
	s.run, s.data = run, g["data"] != ""
	if err := checkWire(run); err != nil {
		return s, err
	}
	if s.dataSHA != "" {
		h := strings.ToLower(s.dataSHA)
		if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
			return s, cli.Usagef("-data-sha256 %q: want the data set's SHA-256 as 64 hexadecimal digits", s.dataSHA)
		}
		if !s.data {
			return s, cli.Usagef("-data-sha256 without -data: give -data (and -split) naming the data's source, recorded with its SHA-256")
		}
		s.dataSHA = h
	}
	if s.data && !run.seedSet && s.dataSHA == "" {
		return s, cli.Usagef("-data without -seed: the server deals the data with the learners' seed to record its SHA-256 in the run's plan; give -seed, or the data's digest with -data-sha256, or leave out -data (the plan then records no data)")
	}
	o := &s.opt
	if o.Dir == "" {
		return s, cli.Usagef("-state is required: the directory where released models are written")
	}
	// The first of these checks (none has side effects) that fails.
	err = cmp.Or(cli.NotFlag("-state", o.Dir, "a directory"), s.tls.check(true), checkDurations(
		duration{"round-timeout", o.RoundTimeout, false},
		duration{"quorum-grace", o.QuorumGrace, false},
		duration{"join-timeout", o.JoinTimeout, true},
		duration{"linger", o.Linger, true},
	), checkListen(s.listen))
	switch {
	case err != nil:
		return s, err
	case s.maxConns < 0:
		return s, cli.Usagef("-max-connections %d: want a number of connections >= 1, or 0 for %d per learner plus %d", s.maxConns, fednet.ConnectionsPerLearner, fednet.SpareConnections)
	case o.MinLearners < 0 || o.MinLearners > run.learners:
		return s, cli.Usagef("-min-learners %d: want 0..%d (-learners)", o.MinLearners, run.learners)
	case run.secure && o.MinLearners != 0:
		return s, cli.Usagef("-min-learners %d with -secure-aggregation: the threshold (-threshold) is the least number of learners", o.MinLearners)
	}
	s.maxConns = cmp.Or(s.maxConns, fednet.DefaultMaxConnections(run.learners))
	return s, nil
}

// runFlags defines ofl's run flags on fs, except those in skip, with
// seedUsage as -seed's usage, and returns the function that returns the
// run flags given (by name, with their values as parsed).
func runFlags(fs *flag.FlagSet, seedUsage string, skip ...string) (given func() map[string]string) {
	sim := newFlagSet(new(config))
	sim.VisitAll(func(f *flag.Flag) {
		switch {
		case f.Name == "seed":
			fs.Var(f.Value, f.Name, seedUsage)
		case !slices.Contains(skip, f.Name):
			fs.Var(f.Value, f.Name, f.Usage)
		}
	})
	return func() map[string]string {
		given := map[string]string{}
		fs.Visit(func(f *flag.Flag) {
			if sim.Lookup(f.Name) != nil {
				given[f.Name] = f.Value.String()
			}
		})
		return given
	}
}

// duration is a duration flag with its value, and whether 0 is allowed.
type duration struct {
	name      string
	v         time.Duration
	zeroValid bool
}

// checkDurations returns a usage error naming the first duration flag
// whose value is negative, or 0 where 0 is not allowed.
func checkDurations(ds ...duration) error {
	for _, d := range ds {
		switch {
		case d.zeroValid && d.v < 0:
			return cli.Usagef("-%s %v: want a duration >= 0", d.name, d.v)
		case !d.zeroValid && d.v <= 0:
			return cli.Usagef("-%s %v: want a duration > 0", d.name, d.v)
		}
	}
	return nil
}

// checkListen refuses, before any work, a -listen address that is not
// host:port with a port number 0..65535 or a service name: net.Listen
// would refuse it only after the factorization is built.
func checkListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return cli.Usagef("-listen %q: want host:port", addr)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return cli.Usagef("-listen %q: want host:port with a port number 0..65535", addr)
	}
	return nil
}

// checkServerAddr refuses, before any work, a learner's -server address
// host:port whose port is not a number 1..65535 or a service name: the
// dial would fail only when tried, and the learner would retry it for
// -give-up. Other forms (a gRPC target with a scheme, unix:PATH, a host
// without a port) are left to gRPC.
func checkServerAddr(addr string) error {
	if strings.Contains(addr, "://") || strings.HasPrefix(addr, "unix:") || strings.HasPrefix(addr, "unix-abstract:") {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	if p, err := net.LookupPort("tcp", port); err != nil || p == 0 {
		return cli.Usagef("-server %q: want host:port with a port number 1..65535", addr)
	}
	return nil
}

// checkFiles returns an error naming the flag of the first of files (flag
// and path; an empty path is skipped) that cannot be read as a regular
// file, before any work; want is what the flags take ("a PEM file").
func checkFiles(want string, files ...cli.File) error {
	for _, f := range files {
		if f.Path == "" {
			continue
		}
		fi, err := os.Stat(f.Path)
		switch {
		case err != nil:
			return fmt.Errorf("%s %s: %v", f.Flag, f.Path, cli.UnwrapPath(err))
		case fi.IsDir():
			return fmt.Errorf("%s %s is a directory, want %s", f.Flag, f.Path, want)
		}
	}
	return nil
}

// checkStateDir returns an error if dir (a -state flag) exists and is not
// a directory, or cannot be looked at, before any work; a missing one is
// created later, but not through a symbolic link that points nowhere (or
// in a loop), nor under a file.
func checkStateDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return fmt.Errorf("-state %s is not a directory", dir)
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		if li, lerr := os.Lstat(dir); lerr == nil && li.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("-state %s is a symbolic link to nothing, want a directory", dir)
		}
		return nil
	}
	return fmt.Errorf("-state %s: %v, want a directory", dir, cli.UnwrapPath(err))
}

// checkResume compares the run flags of c with the plan recorded in
// dir's run.json, when dir holds a readable one, before any work: a
// restart with a flag that contradicts the run it would resume is a usage
// error naming the flag's value and the recorded one, where fednet would
// refuse it only after the factorization, with both plans in full. A
// -strategy that names the recorded strategy in other words (a default
// written out) is not a contradiction: c takes the recorded spelling. What
// this does not compare (a run.json that cannot be read, the noise key,
// the plan's other fields) fednet.NewServer still checks. data is the
// record of the data given (-data), nil without: it must be the recorded
// one.
func checkResume(dir string, c *config, data *plan.Data) error {
	raw, err := fednet.ReadPlan(dir)
	if err != nil {
		return nil // none yet, or fednet.NewServer reports it
	}
	rec, err := plan.Parse(raw)
	if err != nil {
		return nil
	}
	was, err := planArgs(rec)
	if err != nil {
		return nil
	}
	now, err := planArgs(c.runPlan(c.data.dim))
	if err != nil {
		return nil
	}
	where := filepath.Join(dir, "run.json")
	both := maps.Clone(was)
	maps.Copy(both, now)
	for _, k := range slices.Sorted(maps.Keys(both)) {
		if k == "strategy" && now[k] != was[k] && sameStrategy(now[k], was[k]) {
			// The recorded spelling of the same strategy (a default
			// written out): the run resumes with the recorded plan.
			c.strategy = was[k]
			continue
		}
		if now[k] != was[k] {
			return cli.Usagef("-%s %s contradicts the run's plan in %s: %s %s (a restart resumes that run; a new run needs a fresh -state)", k, cmp.Or(now[k], "(none)"), where, k, cmp.Or(was[k], "(none)"))
		}
	}
	switch {
	case c.seedSet && rec.SeedSHA256 == "":
		return cli.Usagef("-seed %d contradicts the run's plan in %s: the run has no seed (its noise key was drawn from crypto/rand)", c.seed, where)
	case c.seedSet && plan.SeedDigest(c.seed) != rec.SeedSHA256:
		return cli.Usagef("-seed %d contradicts the run's plan in %s: its seed has SHA-256 %s", c.seed, where, rec.SeedSHA256)
	case !c.seedSet && rec.SeedSHA256 != "":
		return cli.Usagef("-seed is missing: the run's plan in %s records a seed (SHA-256 %s); give the run's -seed to resume it", where, rec.SeedSHA256)
	case sameData(data, rec.Data):
	case rec.Data == nil:
		return cli.Usagef("%s contradicts the run's plan in %s: the run records no data (it was started without -data); leave out -data to resume it", dataFlags(*c), where)
	case data == nil:
		return cli.Usagef("-data is missing: the run's plan in %s records its data (%s); give the run's -data (and -split) to resume it", where, describeData(rec.Data))
	default:
		return cli.Usagef("%s contradicts the run's plan in %s: the data given is %s, the run's is %s", dataFlags(*c), where, describeData(data), describeData(rec.Data))
	}
	return nil
}

// checkWire refuses run flags that the protocol, which carries counts as
// int32, cannot send to the learners.
func checkWire(c config) error {
	for _, p := range []struct {
		name string
		v    int
	}{{"learners", c.learners}, {"rounds", c.rounds}, {"tau", c.tau}, {"epochs", c.epochs}, {"dim", c.data.dim}} {
		if p.v > fednet.MaxWire {
			return cli.Usagef("-%s %d: want at most %d (the protocol carries it as int32)", p.name, p.v, fednet.MaxWire)
		}
	}
	return nil
}

// insecureNonLoopback is the flag that lets -insecure leave loopback.
const insecureNonLoopback = "insecure-nonloopback"

// checkLoopback returns a usage error unless addr (host:port, the value of
// flag) is on loopback only: an IP address that is loopback, or a host
// name every address of which (from lookup) is loopback. An empty host,
// 0.0.0.0 or :: (every interface), a name that does not resolve and any
// other address are not. A learner's unix: and unix-abstract: targets are
// local sockets and pass.
func checkLoopback(ctx context.Context, flag, addr string, lookup func(ctx context.Context, host string) ([]netip.Addr, error)) error {
	refuse := func(why string) error {
		return cli.Usagef("-insecure with %s %s: %s; plaintext is for loopback tests only (add -%s to accept it)", flag, addr, why, insecureNonLoopback)
	}
	if strings.HasPrefix(addr, "unix:") || strings.HasPrefix(addr, "unix-abstract:") {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return cli.Usagef("%s %q: want host:port", flag, addr)
	}
	if host == "" {
		return refuse("the host is empty, which means every interface")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		switch ip = ip.Unmap(); {
		case ip.IsUnspecified():
			return refuse(ip.String() + " means every interface")
		case !ip.IsLoopback():
			return refuse(ip.String() + " is not a loopback address")
		}
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ips, err := lookup(lctx, host)
	if err != nil || len(ips) == 0 {
		return refuse(fmt.Sprintf("%q does not resolve (%v), so it cannot be shown to be loopback", host, err))
	}
	for _, ip := range ips {
		if !ip.Unmap().IsLoopback() {
			return refuse(fmt.Sprintf("%q resolves to %v, which is not loopback", host, ip))
		}
	}
	return nil
}

// lookupHost resolves a host name to its IP addresses.
func lookupHost(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// check checks the TLS flags of the server (or a learner).
func (t tlsFlags) check(server bool) error {
	switch {
	case t.nonLoopback && !t.insecure:
		return cli.Usagef("-%s goes with -insecure only", insecureNonLoopback)
	case t.insecure && (t.cert != "" || t.key != "" || t.ca != ""):
		return cli.Usagef("-insecure excludes the TLS flags")
	case t.insecure:
		return nil
	case server && (t.cert == "" || t.key == ""):
		return cli.Usagef("the server needs -tls-cert and -tls-key (or -insecure, for loopback tests)")
	case !server && t.ca == "":
		return cli.Usagef("the learner needs -ca, the CA of the server's certificate (or -insecure, for loopback tests)")
	case (t.cert == "") != (t.key == ""):
		return cli.Usagef("-tls-cert and -tls-key go together")
	}
	return nil
}

// fileError names the flags of the PEM files that err, an error of
// fednet.ServerTLS or fednet.ClientTLS, is about: -tls-cert and -tls-key
// for the certificate and its key, caFlag (-client-ca or -ca) for the CA.
func (t tlsFlags) fileError(err error, caFlag string) error {
	msg := strings.TrimPrefix(err.Error(), "fednet: ")
	if rest, ok := strings.CutPrefix(msg, "CA certificates: "); ok {
		rest = strings.TrimPrefix(strings.TrimPrefix(rest, "atomicfile: "), t.ca+" ")
		return fmt.Errorf("%s %s: %s (want the CA's PEM certificates)", caFlag, t.ca, rest)
	}
	for _, p := range []string{"server certificate: ", "learner certificate: "} {
		if rest, ok := strings.CutPrefix(msg, p); ok {
			return fmt.Errorf("-tls-cert %s, -tls-key %s: %s (want a PEM certificate chain and its private key)", t.cert, t.key, strings.TrimPrefix(rest, "atomicfile: "))
		}
	}
	return err
}

func runServer(ctx context.Context, args []string, e env) error {
	s, err := parseServerArgs(args, e.stdout)
	if err != nil {
		return err
	}
	if s.tls.insecure && !s.tls.nonLoopback {
		if err := checkLoopback(ctx, "-listen", s.listen, lookupHost); err != nil {
			return err
		}
	}
	c := s.run
	// With -data, the data set as the learners deal it, for its record in
	// the plan (a CSV file also gives d); the server uses nothing else of
	// it.
	var data *plan.Data
	if s.data && c.seedSet {
		if err := checkEvaluateMemory(c, e.memAvailable); err != nil {
			return err
		}
		ds, err := loadDataContext(ctx, c)
		if err != nil {
			return err
		}
		c.data.dim, data = ds.Dim, dataRecord(c, ds)
		if s.dataSHA != "" && s.dataSHA != data.SHA256 {
			return cli.Usagef("-data-sha256 %s contradicts %s with -seed %d: the data set they deal has SHA-256 %s", s.dataSHA, dataFlags(c), c.seed, data.SHA256)
		}
	} else if s.data {
		// No seed to deal the data with: the operator's digest is
		// recorded with the source; a CSV file is read for its d.
		if c.data.file != "" {
			if err := checkEvaluateMemory(c, e.memAvailable); err != nil {
				return err
			}
			t, err := cli.Interruptible(ctx, func() (*dataset.Table, error) { return dataset.LoadCSV(c.data.file) })
			if err != nil {
				return dataError(c.data.file, err)
			}
			c.data.dim = t.Dim
		}
		data = dataSource(c)
		data.SHA256 = s.dataSHA
	}
	if s.data {
		if err := checkWire(c); err != nil {
			return err
		}
	}
	if err := checkNeed("", c, serverMemoryNeed(c), e.memAvailable); err != nil {
		return err
	}
	if err := checkStateDir(s.opt.Dir); err != nil {
		return err
	}
	if err := checkResume(s.opt.Dir, &c, data); err != nil {
		return err
	}
	if err := checkFiles("a PEM file", cli.File{Flag: "-tls-cert", Path: s.tls.cert}, cli.File{Flag: "-tls-key", Path: s.tls.key}, cli.File{Flag: "-client-ca", Path: s.tls.ca}); err != nil {
		return err
	}
	// The credentials too, before the factorization.
	var creds credentials.TransportCredentials
	if s.tls.insecure {
		creds = insecure.NewCredentials()
	} else if creds, err = fednet.ServerTLS(s.tls.cert, s.tls.key, s.tls.ca); err != nil {
		return s.tls.fileError(err, "-client-ca")
	}
	// A -listen address in use, or not this machine's, is found before
	// the factorization too; the address is bound again after it.
	probe, err := net.Listen("tcp", s.listen)
	if err != nil {
		return fmt.Errorf("-listen: %w", err)
	}
	probe.Close()
	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	cfg := c.optimiser()
	cfg.EvalEvery = 0
	features := c.data.dim
	dim := (model.Logistic{}).NumParams(features)
	shape := fedopt.Shape{Learners: c.learners, Rounds: c.rounds, Tau: c.tau, Dim: dim}
	// The run's plan: the noise comes from it, and run.json records it.
	pl := c.runPlan(features)
	pl.Data = data
	if data != nil {
		log.Info("data", "source", data.Source, "split", data.Split, "sha256", data.SHA256)
	}
	var (
		noise    func(start int, key [32]byte) (mechanism.Mechanism, error)
		noiseKey *[32]byte
	)
	if c.algo.Private() {
		f, priv, err := buildNoise(ctx, pl)
		if err != nil {
			return err
		}
		cfg.Privacy = priv
		if c.seedSet {
			// As ofl's repetition 0; without -seed the server draws the
			// key from crypto/rand and keeps it in the state directory.
			key := mechanism.SeedKey(experiment.RepSeed(c.seed, 0))
			noiseKey = &key
			// The key is a function of a 64-bit seed that every learner
			// knows (it deals its data with -seed) and that a search of
			// run.json's fingerprint finds: say so at every start.
			log.Warn("seeded noise key", "reason", "-seed derives the noise key from the seed: anyone who knows the seed (every learner dealing its data with it) or finds it by a search of run.json's noise_key_sha256 can remove the noise from every released model, and another run with this seed repeats this noise; for experiments only: leave out -seed for a private run (the key then comes from crypto/rand, kept in -state's noise.key)")
		}
		noise = func(start int, key [32]byte) (mechanism.Mechanism, error) {
			return mechanism.New(f, dim, priv.NoiseStd, mechanism.WithKey(key), mechanism.WithStartRound(start))
		}
		log.Info("privacy", "eps", priv.Eps, "delta", priv.Delta, "sensitivity", priv.Sensitivity, "noise_std", priv.NoiseStd, "strategy", f.Strategy)
	}
	planJSON, err := pl.Marshal()
	if err != nil {
		return err
	}
	opts := s.opt
	opts.Config, opts.Shape = cfg, shape
	opts.Model = fednet.Model{Name: "logistic", L2: c.l2, Features: features}
	opts.Noise, opts.NoiseKey = noise, noiseKey
	opts.Epochs, opts.Plan, opts.Log = c.epochs, planJSON, log
	if s.tls.ca != "" {
		opts.Identify = fednet.IdentifyByCertificate
	}
	// Listen first: a bad -listen leaves the state directory untouched.
	lis, err := net.Listen("tcp", s.listen)
	if err != nil {
		return fmt.Errorf("-listen: %w", err)
	}
	defer lis.Close()
	// Bounds what peers hold outside every call limit (docs/distributed.md).
	lis = fednet.LimitConnections(lis, s.maxConns)
	if s.tls.insecure && !s.tls.nonLoopback {
		// What was bound, not what the name resolved to a moment ago.
		if err := checkLoopback(ctx, "-listen", lis.Addr().String(), lookupHost); err != nil {
			return err
		}
	}
	srv, err := fednet.NewServer(opts)
	if err != nil {
		return err
	}
	g := grpc.NewServer(append(fednet.ServerOptionsGRPC(), grpc.Creds(fednet.LogHandshakes(creds, log)))...)
	srv.Register(g)
	go g.Serve(lis)
	defer func() {
		// Let the answers in flight (the final model) reach the learners.
		stopped := make(chan struct{})
		go func() { g.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			g.Stop()
		}
	}()
	if c.secure && s.tls.ca == "" {
		// Secure aggregation's secrecy is counted in colluders, and a
		// stranger who claims a free learner index is one more.
		log.Warn("unauthenticated learners", "reason", "-secure-aggregation without -client-ca: anyone who reaches the port can claim a learner index not yet taken, and each such claimer counts as a colluder that -colluders does not include; give -client-ca for the secrecy the plan states")
	}
	if s.tls.insecure && s.tls.nonLoopback {
		log.Warn("plaintext", "addr", lis.Addr().String(), "reason", "-insecure with -"+insecureNonLoopback+": models and updates cross the network unencrypted and unauthenticated")
	}
	log.Info("serving", "addr", lis.Addr().String(), "max_connections", s.maxConns, "learners", shape.Learners, "rounds", shape.Rounds, "dim", dim, "tls", !s.tls.insecure, "mtls", s.tls.ca != "")
	err = srv.Run(ctx)
	if ctx.Err() != nil {
		r, _ := srv.Round()
		return fmt.Errorf("interrupted at round %d; the released models x^0..x^%d are in %s: run the same command to resume", r, r, opts.Dir)
	}
	return err
}

// learnerFlags is the learner's command line: opt holds the server's
// address, the learner's index, timeouts and state directory.
type learnerFlags struct {
	data, split, out string
	seed             uint64
	tls              tlsFlags
	opt              fednet.LearnerOptions
}

func parseLearnerArgs(args []string, help io.Writer) (learnerFlags, error) {
	var l learnerFlags
	fs := cli.NewFlagSet("ofl learner")
	fs.StringVar(&l.opt.Addr, "server", "127.0.0.1:7070", "the server's address")
	fs.IntVar(&l.opt.ID, "id", -1, "this learner's index I, 0 <= I < n (required)")
	fs.StringVar(&l.data, "data", "synthetic", "data: synthetic (alpha = beta = 0.1), synthetic:alpha=A,beta=B (A >= 0 finite, 0 <= B <= 1000), or a CSV file (label first)")
	fs.StringVar(&l.split, "split", "iid", "how CSV rows are dealt to learners: iid, label or feature:K")
	fs.Uint64Var(&l.seed, "seed", 0, "seed of the data (required; the same on every learner: it deals the data)")
	fs.StringVar(&l.out, "out", "", "write the final model to this file (one number per line)")
	fs.BoolVar(&l.tls.insecure, "insecure", false, "connect without TLS (loopback tests only: refused for a -server address that is not loopback)")
	fs.BoolVar(&l.tls.nonLoopback, insecureNonLoopback, false, "with -insecure, connect to a server that is not on loopback all the same (plaintext: anyone on the network reads and alters the models and updates)")
	fs.StringVar(&l.tls.ca, "ca", "", "PEM CA of the server's certificate")
	fs.StringVar(&l.tls.serverName, "server-name", "", "name to verify the server's certificate for (default: the host of -server)")
	fs.StringVar(&l.tls.cert, "tls-cert", "", "PEM client certificate, for mutual TLS")
	fs.StringVar(&l.tls.key, "tls-key", "", "PEM client key, for mutual TLS")
	fs.DurationVar(&l.opt.CallTimeout, "call-timeout", 30*time.Second, "deadline of each call that does not wait for a round")
	fs.DurationVar(&l.opt.WaitTimeout, "wait-timeout", 60*time.Second, "deadline of each call that waits for a round")
	fs.DurationVar(&l.opt.GiveUp, "give-up", 2*time.Minute, "how long to retry an unreachable server")
	fs.StringVar(&l.opt.StateDir, "state", "", "the learner's state directory (one per learner and run), required with secure aggregation: it records the newest model received, so that a restarted learner still witnesses a server whose state was rolled back, and which attempt of each round this learner unmasked")
	fs.IntVar(&l.opt.MinColluders, "colluders", 0, "the least number of learners `C` colluding with the server that this learner requires the run's secure aggregation to withstand: it refuses a run without secure aggregation (C > 0), one that announces fewer colluders, or one whose threshold T has 2T <= n + C (0: it takes the server's announced colluders, checked against the rule)")
	fs.BoolVar(&l.opt.NewRun, "new-run", false, "replace a record of another run in -state with this run's (only when that run is over for good; a fresh directory is the normal way)")
	set, err := cli.ParseFlags(fs, args, help, learnerUsage, "", cli.Once)
	switch {
	case err != nil:
		return l, err
	case !set["id"]:
		return l, cli.Usagef("-id is required: this learner's index, >= 0")
	case l.opt.ID < 0:
		return l, cli.Usagef("-id %d: want a learner's index >= 0", l.opt.ID)
	case l.opt.ID > fednet.MaxWire:
		return l, cli.Usagef("-id %d: want at most %d (the protocol carries it as int32)", l.opt.ID, fednet.MaxWire)
	case !set["seed"]:
		return l, cli.Usagef("-seed is required: every learner deals the data with the same seed")
	case l.opt.MinColluders < 0 || l.opt.MinColluders > fednet.MaxWire:
		return l, cli.Usagef("-colluders %d: want a number of learners 0..%d", l.opt.MinColluders, fednet.MaxWire)
	}
	if err := checkDurations(
		duration{"call-timeout", l.opt.CallTimeout, false},
		duration{"wait-timeout", l.opt.WaitTimeout, false},
		duration{"give-up", l.opt.GiveUp, false},
	); err != nil {
		return l, err
	}
	if _, err := parseData(l.data, 1); err != nil {
		return l, err
	}
	if _, err := dataset.ParseSplit(l.split); err != nil {
		return l, cli.Usagef("-split %q: want iid, label or feature:K", l.split)
	}
	// The first of these checks (none has side effects) that fails.
	err = cmp.Or(checkServerAddr(l.opt.Addr), l.tls.check(false))
	switch {
	case err != nil:
		return l, err
	case set["out"] && l.out == "":
		return l, cli.Usagef("-out is empty: want a file name")
	case set["state"] && l.opt.StateDir == "":
		return l, cli.Usagef("-state is empty: want a directory")
	}
	if err := cli.NotFlag("-state", l.opt.StateDir, "a directory"); err != nil {
		return l, err
	}
	if l.opt.NewRun && l.opt.StateDir == "" {
		return l, cli.Usagef("-new-run without -state: want the state directory whose record it replaces")
	}
	return l, nil
}

func runLearner(ctx context.Context, args []string, e env) error {
	l, err := parseLearnerArgs(args, e.stdout)
	if err != nil {
		return err
	}
	spec, _ := parseData(l.data, 1) // checked by parseLearnerArgs
	dataFile := cli.File{Flag: "-data", Path: spec.file}
	if l.out != "" {
		// Fail before the run, not after it (docs/cli.md, output policy).
		if err := cli.CheckOutputs([]cli.File{{Flag: "-out", Path: l.out}}, []cli.File{dataFile}); err != nil {
			return err
		}
	}
	if l.tls.insecure && !l.tls.nonLoopback {
		if err := checkLoopback(ctx, "-server", l.opt.Addr, lookupHost); err != nil {
			return err
		}
	}
	if l.opt.StateDir != "" {
		if err := checkStateDir(l.opt.StateDir); err != nil {
			return err
		}
	}
	if err := checkFiles("a PEM file", cli.File{Flag: "-ca", Path: l.tls.ca}, cli.File{Flag: "-tls-cert", Path: l.tls.cert}, cli.File{Flag: "-tls-key", Path: l.tls.key}); err != nil {
		return err
	}
	// A -data file that is missing or a directory is found before the
	// learner joins the server (it reads the file after the Join, which
	// gives it the shape to deal the data for).
	if err := checkFiles("a CSV file", dataFile); err != nil {
		if _, serr := os.Stat(dataFile.Path); errors.Is(serr, fs.ErrNotExist) {
			return fmt.Errorf("%v (want %s)", err, dataWant)
		}
		return err
	}
	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	var creds credentials.TransportCredentials
	if l.tls.insecure {
		creds = insecure.NewCredentials()
	} else if creds, err = fednet.ClientTLS(l.tls.ca, l.tls.serverName, l.tls.cert, l.tls.key); err != nil {
		return l.tls.fileError(err, "-ca")
	}
	data := func(rc *flv1.RunConfig) (fedopt.Stream, error) {
		n, R, tau, d := int(rc.GetLearners()), int(rc.GetRounds()), int(rc.GetTau()), int(rc.GetFeatures())
		spec, err := parseData(l.data, d)
		if err != nil {
			return nil, err
		}
		split, _ := dataset.ParseSplit(l.split)
		epochs := max(int(rc.GetEpochs()), 1)
		if R%epochs != 0 {
			return nil, fmt.Errorf("the server's %d epochs do not divide its %d rounds", epochs, R)
		}
		ds, err := loadDataContext(ctx, config{data: spec, split: split, learners: n, rounds: R, tau: tau, epochs: epochs, seed: l.seed})
		if err != nil {
			return nil, err
		}
		if ds.Dim != d {
			return nil, cli.Usagef("-data %s has %d features, contradicting the server's run: features %d", l.data, ds.Dim, d)
		}
		return ds.Stream(l.opt.ID), nil
	}
	l.opt.Creds, l.opt.Data, l.opt.Log = creds, data, log
	x, err := fednet.RunLearner(ctx, l.opt)
	if ctx.Err() != nil {
		return errors.New("interrupted; run the same command to rejoin")
	}
	if errors.Is(err, fednet.ErrTLSMismatch) {
		if l.tls.insecure {
			return fmt.Errorf("%w; leave out -insecure and give -ca (and -tls-cert, -tls-key for mutual TLS)", err)
		}
		return fmt.Errorf("%w; the server runs with -insecure: give the learner -insecure too (loopback tests only), or the server -tls-cert and -tls-key", err)
	}
	// A server with mutual TLS refuses a learner without a certificate
	// with a TLS alert, which reaches here only as gRPC's text.
	if err != nil && l.tls.cert == "" && strings.Contains(err.Error(), "tls: certificate required") {
		return fmt.Errorf("%w; the server requires mutual TLS: give -tls-cert and -tls-key (this learner's certificate and key)", err)
	}
	// The server numbers its learners 0..n-1 (fednet's typed refusal).
	if ie := (*fednet.LearnerIndexError)(nil); errors.As(err, &ie) && ie.ID == l.opt.ID {
		return cli.Usagef("-id %d contradicts the server's run: want an index in 0..%d (the server refused it)", l.opt.ID, ie.Learners-1)
	}
	if err != nil {
		return err
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("the optimiser diverged: the final model has entry %d = %v; nothing written", i, v)
		}
	}
	if l.out == "" {
		return nil
	}
	// One number per line, in the shortest form that reads back exactly;
	// written as every output is (cli.WriteOutputs), so that an error
	// names -out and its file.
	err = cli.WriteOutputs(ctx, e.stderr, "ofl learner: ", cli.Output{File: cli.File{Flag: "-out", Path: l.out}, Perm: 0o644, Write: func(w io.Writer) error {
		var b []byte
		for _, v := range x {
			b = strconv.AppendFloat(b, v, 'g', -1, 64)
			b = append(b, '\n')
		}
		_, err := w.Write(b)
		return err
	}})
	if err != nil && ctx.Err() != nil {
		// The learner says where it stopped (cli.WriteOutputs returns
		// ctx's bare error).
		return fmt.Errorf("-out %s: interrupted while writing the final model; not written: %w", l.out, err)
	}
	return err
}
