// Package fedopt is the online federated optimiser of Zhang, Zhu and
// Johansson, "Differentially Private Online Federated Learning with
// Correlated Noise" (Algorithm 1), with its baseline and its metrics.
//
// # Overview
//
// n learners each serve a stream of clients. In each of R rounds every
// learner takes tau local gradient steps, one fresh client sample per step,
// from the released model x^r; the server averages the learners' updates,
// adds round r's noise vector and releases x^{r+1}. Sample (i, r, t) of the
// stream is learner i's client at step t of round r (see "Models, data and
// experiments" for the packages around the optimiser).
//
// # Roles
//
// The algorithm is split into roles that exchange only models and
// updates: a [Learner] holds its stream of clients and turns a released
// model into its update (the sum of its tau clipped gradients); a [Server]
// holds the model and the noise mechanism, checks and aggregates the
// updates, adds the round's noise and releases the next model; an
// experiment.Evaluator observes the released models and computes the metrics from
// the whole data set, which neither of the others needs. [Simulate]
// connects them in one process (experiment.Run is Simulate with an Evaluator);
// package fednet connects the same roles over gRPC, across processes or
// machines, and gives the same models bit for bit.
//
// # Algorithms
//
//   - Correlated: Algorithm 1. Learner i: z^{r,0} = x^r,
//     z^{r,t+1} = z^{r,t} - eta clip(grad f_i^{r,t}(z^{r,t})). Server:
//     x^{r+1} = x^r - eta~ (g^r + w^r), eta~ = eta eta_g tau, where
//     g^r = (x^r - mean_i z_i^{r,tau}) / (eta tau) is the mean of the n tau
//     clipped gradients and w^r is round r's vector of the mechanism, row r
//     of C^{-1} Z for a factorization A = B C of the prefix sums (the
//     paper's (b^{r+1} - b^r) xi). The default factorization is the optimal
//     one.
//   - Independent: the paper's baseline, x^{r+1} = x^r - eta_ind (h^r + w^r)
//     with h^r = (1/n) sum_i sum_t clip(grad f_i^{r,t}(x^r)) (no local
//     steps) and independent Gaussian w^r (the identity factorization).
//   - NonPrivate: Algorithm 1 without noise.
//   - BaselineCorrelated: the baseline's update h^r with correlated noise,
//     x^{r+1} = x^r - eta_ind (h^r + w^r), w^r row r of C^{-1} Z. Its
//     sensitivity is the baseline's times gamma; it gets the
//     factorization's noise reduction.
//
// Every per-sample gradient is clipped to norm B_g ([Config.Clip]). That is
// what makes the sensitivity bound, and so the privacy guarantee, hold for
// any data.
//
// # Privacy
//
// Neighbouring data sets differ in one client's sample; every sample is
// used once. The run's plan (package plan, plan.Plan.Calibrate: dpmf's
// only calibration recipe) sets the noise standard deviation for (eps,
// delta) from package accountant; [PrivacyOf] turns its record into a
// [Privacy], which [Config.Privacy] carries into the run. With the
// Exact calibration the sensitivity of C G is 2 gamma B_g / n for Algorithm
// 1 and BaselineCorrelated (gamma the largest column norm of C) and
// 2 B_g / n for the baseline,
// and the noise is the least that the exact Gaussian privacy curve allows;
// the Paper calibration reproduces the paper's formulas, which use 2 gamma
// B_g and 2 B_g with conservative conversions. plan.Plan.Calibrate states
// the argument.
//
// A record holds for its run only: [NewServer] refuses one of other
// learners, rounds, tau, clip or noise std, and one calibrated for another
// factorization than the one its mechanism streams (the record's
// [Privacy.OperatorSHA256] against plan.OperatorDigest of
// mechanism.FactorizationOf: another C with the same std has another
// sensitivity), naming both. [NewLearner] (given the record) and
// [Simulate] refuse a learner whose data serves each client in more rounds
// than the record's participation allows, such as data replayed by
// dataset.Dataset.Epochs(k), k > 1, under single participation (see
// [Stream]; the rule is [CheckEpochs], which package fednet applies to
// its networked learners and servers).
//
// # Secure aggregation
//
// With [Config.Quantizer] (package secagg) the server aggregates as secure
// aggregation does: every update is quantized to the ring Z_{2^64}
// ([QuantizeUpdate]; a networked learner calls the same), the quantized
// updates are summed there without wrapping and the sum is dequantized:
// each entry is an integer of magnitude at most 2^53 (an entry of a ring
// sum beyond what the present updates can give is folded back into that
// range, not refused: [Server.ReleaseRingSum]), converted to float64 and
// scaled by 2^-k exactly. The server
// then divides it by n tau (or n), which rounds, and adds the noise.
// [Server.ReleaseRingSum] releases from a ring sum computed elsewhere (the
// unmasked sum of the protocol) and gives the same model bit for bit. The
// plan's calibration then includes the quantization term and a bound on
// the division's rounding (plan.Plan.EffectiveClip), which
// [Config.Validate] and [NewServer] check.
//
// # Models, data and experiments
//
// The optimiser's inputs and harness live in their own packages: package
// model holds the losses (model.Model, model.Logistic) and their
// reference minimisers, package dataset the data streams
// (dataset.Dataset, dataset.Synthetic, CSV files), and package
// experiment the problem with its reference values, the evaluator, the
// repetitions and the summaries (experiment.Run runs one repetition with a
// noise mechanism, experiment.Repeat many in parallel, and an
// experiment.Experiment one configuration of the paper's experiments,
// with the factorization and noise calibration of its plan).
//
// # Reproducibility
//
// A run depends only on its data, configuration and mechanism. Learners
// may run in goroutines ([Config.ParallelLearners]) and repetitions in
// parallel (experiment.RepeatOptions.Workers); sums are taken in a fixed order, so
// the numbers are the same bit for bit either way.
//
// # Plugging in
//
// A model is any model.Model (loss, gradient; optionally model.Minimizer,
// model.Classifier, model.BatchEvaluator); data is any dataset.Dataset; noise is any
// mechanism.Mechanism, passed to experiment.Run or, one per repetition, as a
// experiment.NoiseSource to experiment.Repeat.
//
// # Errors and panics
//
// Following the policy shared by dpmf's numerical packages (see package
// factorize): everything a caller's data can cause is an error, never a
// panic. A nil or zero-value *experiment.Problem, *dataset.Dataset, *dataset.Table,
// *experiment.Experiment, model.Model or io.Reader, a [Config] field out of range and a
// bad shape are a *experiment.ParamError whose Param names the argument or the
// field ("eta", "eta_g", "eta_ind", "clip", "eval-every", "algorithm",
// "problem", "data", "model", "reader", ...), so that a command maps it to
// its flag with errors.As. A CSV file that cannot be parsed is an error
// naming the file and line; lines and fields have a size limit
// (dataset.MaxCSVLine).
//
// Panics are programmer errors, documented where they can happen:
// dataset.Samples whose slices disagree with Dim, destination slices of the
// wrong length, accessors (such as dataset.Table.Len) called on a nil pointer,
// and [Clip] with a negative or NaN bound (clipping to a
// negative norm would reverse the gradient; [Config.Validate] rejects such
// a bound before a run). [Clip] itself is total on its data: infinite
// entries give the direction of their signs and a NaN entry gives zero, so
// a clipped gradient never exceeds the bound (but for the rounding that
// [UpdateBound]'s margin allows; the server aggregates an update above
// tau B_g scaled down to exact norm at most tau B_g, [Server.Release]).
package fedopt
