// Package fednet runs the roles of package fedopt as separate processes:
// a server and n learners that talk over gRPC with the versioned protocol
// of proto/dpmf/fl/v1 (package flv1). See docs/distributed.md for the
// protocol, the security model and a walk-through.
//
// The server ([NewServer], [Server.Run]) holds the model, the noise
// mechanism and its key, and the privacy record; it never sees data. In
// every round it collects one update per learner, checks each (dimension,
// finite entries, norm at most tau B_g, the open round, once per learner),
// releases the next model through a fedopt.Server (which adds the round's
// noise), writes it to its state directory, and only then serves it. A
// server killed at any point and restarted on the same directory resumes
// at the last released round with the noise stream positioned there
// (mechanism.WithStartRound), so the released models are those of an
// uninterrupted run. Only a build that draws the run's noise and
// factorization as the one that started it resumes it (run.json records
// both; another is refused): finish a run with the build that started it.
//
// In a private run the server announces the participation of its privacy
// record (RunConfig.participation), and each learner checks its data
// against it at Join (fedopt.CheckEpochs): data that serves a client in
// more rounds than the record allows is refused before any update.
//
// # State integrity
//
// The noise of round r is a function of the run's key and r, so a server
// that released round r twice from different updates would reveal their
// difference without noise. The state directory is built so that this
// cannot happen, whatever is lost, restored, copied or started twice: one
// server holds it at a time (an exclusive lock, whose file the server
// checks is still its own before it serves a release: a removed lock
// file stops it); run.json binds it to a
// run identity, the run's plan, the noise key's fingerprint and that of
// the noise derivation (mechanism.DerivationFingerprint); every
// round file carries the run identity and the hash of the round before
// (a hash chain); and a high-water mark, synced to disk before a model is
// served, records the last released round. A restart that finds less
// than was released, a file of another run, a broken chain, a copied
// directory or a missing, foreign or exposed key refuses to run. A
// complete older copy put back in place cannot be told from the files
// alone: the learners can, because each tells the server the newest
// round it has received, and a server that is behind stops; a learner
// with a state directory (LearnerOptions.StateDir) records that witness
// durably before it uses the model, so that it still counts once the
// learner process restarts. The digest a
// learner receives with each model carries an HMAC tag under a key
// derived from the noise key, so only a genuine witness stops the server;
// a forged one (a round never released, a digest never sent) is refused
// and the run goes on. See docs/distributed.md, "Faults".
//
// A learner ([RunLearner]) holds its own data and computes its update
// with a fedopt.Learner from the model it fetched. Its per-sample loss is
// the logistic loss, or a model the caller gives (LearnerOptions.Model)
// for a server that names it (Model.Name): the server passes the name
// only and never evaluates the loss. With the same data,
// configuration and noise seed the networked run releases the same models
// as fedopt.Simulate, bit for bit: the server sums the updates in learner
// order whatever the order of arrival.
//
// Dropouts: a round closes when every learner has submitted, when
// ServerOptions.QuorumGrace has passed since ServerOptions.MinLearners
// (below n) updates were in, or after ServerOptions.RoundTimeout with at
// least MinLearners updates; missing updates count as zero and the server
// still divides by the planned n, so the sensitivity 2 gamma B_g / n of
// the calibration is unchanged. With fewer updates the server stops; a
// restart resumes. The first round of a server process opens when the
// first learner reaches it (bounded by ServerOptions.JoinTimeout if set),
// so a server may be started long before its learners.
//
// # Secure aggregation
//
// With ServerOptions.SecureAggregation (or a plan with a
// secure_aggregation section) the server learns only the sum of the
// surviving learners' updates: each round runs the protocol of package
// secagg (Bonawitz et al., CCS 2017) through the calls SecAgg and
// SubmitMasked of protocol revision 2. The learners quantize their
// updates to Z_{2^64} (fedopt.QuantizeUpdate, which holds an update to
// norm tau B_g exactly, since the server sees only the sum, and refuses
// one beyond tau B_g's rounding margin or with an entry out of range) and mask them; a phase closes when every learner of the previous phase
// answered, QuorumGrace after the threshold T did, or at RoundTimeout
// with at least T (fewer: ErrTooFewLearners); the unmasked ring sum is
// released through fedopt.Server.ReleaseRingSum, to the models of
// fedopt.Simulate with the same quantizer bit for bit. Every phase close
// is written to the state directory (secagg-G.state, G the server's
// generation) before its result is served, so a restarted server resumes
// the attempt at that phase. A learner of such a run needs
// LearnerOptions.StateDir, where it records durably, before it answers,
// the attempt of each round it unmasked: even restarted, it never unmasks
// two attempts of a round. It tells the server that attempt on every call
// of the round; when more than n - T learners unmasked another attempt
// than the open one, no attempt can collect T answers, and the server
// stops with ErrRoundStuck. See docs/distributed.md, "Secure aggregation".
//
// Vectors travel in chunks of [ChunkLen] values, so models of any
// dimension pass gRPC's message limit. The server's memory is bounded
// whatever its peers send: calls in progress are limited per learner and
// in total (ServerOptions.MaxUploads and friends; excess calls get
// ResourceExhausted), an upload grows only as its chunks arrive, stalled
// uploads and unread model streams are cut off after
// ServerOptions.CallTimeout, and the log lines about refused calls are
// rate-limited. An upload is decided once: one cut off at its deadline is
// never aggregated. Transport security comes from
// [ServerTLS] and [ClientTLS]; with mutual TLS, [IdentifyByCertificate]
// binds learner i to a certificate for LearnerName(i). [LogHandshakes]
// makes the server log failed handshakes (rate-limited), and a learner
// that disagrees with the server on TLS stops at once with
// [ErrTLSMismatch] instead of retrying. A learner index outside the run
// is refused with a typed status (an ErrorInfo detail,
// [ReasonLearnerIndex]) that [RunLearner] returns as a
// *[LearnerIndexError] ([ErrLearnerIndex]). A learner's witness of
// another run than the server's is refused the same way
// (FailedPrecondition, [ReasonOtherRun]); a learner with
// LearnerOptions.NewRun drops its witness and asks again on that detail
// only, and a learner without it stops.
//
// # Errors and panics
//
// Following the policy shared by dpmf's packages (see package factorize),
// nothing a caller passes makes this package panic: options out of range
// ([NewServer], [RunLearner]), an empty state directory, a negative round
// ([ReadRound]) and the methods of a nil or zero-value *[Server] (one not
// made by NewServer: Run returns an error, the gRPC methods
// FailedPrecondition, Round returns 0 and nil) are errors. A state file
// that is not a regular file (a FIFO or a device planted in the state
// directory) is an error at once, never a blocked read.
package fednet
