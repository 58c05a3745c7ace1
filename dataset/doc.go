// Package dataset holds the data streams of dpmf's online federated
// optimiser (package fedopt): a [Dataset] is the stream of samples, sample
// (i, r, t) being learner i's client at local step t of round r, and
// [Dataset.Stream] is one learner's view of it.
//
// [Synthetic] generates the binary variant of the synthetic(alpha, beta)
// data of Li et al. (FedProx), one seeded stream per learner. [LoadCSV]
// reads a labelled CSV file, [Table.Standardize] standardises its
// features, and [Table.Deal] deals rows to learners iid, by label or
// sorted by a feature. [Dataset.Epochs] replays each learner's clients for
// several epochs.
//
// A nil or zero-value *[Dataset] or *[Table], an io.Reader that is nil and
// a bad shape or split are a *[ParamError]; a CSV file that cannot be
// parsed is an error naming the file and line; lines and fields have a
// size limit ([MaxCSVLine]).
package dataset
