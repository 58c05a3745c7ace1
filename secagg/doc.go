// Package secagg is the secure-aggregation protocol core of dpmf: the
// server learns the sum of the surviving learners' updates in the ring
// Z_{2^64} and nothing more, with learners dropping out at any phase.
//
// # Protocol
//
// It is the full-graph protocol of Bonawitz et al., "Practical Secure
// Aggregation for Privacy-Preserving Machine Learning" (CCS 2017), with
// per-round keys and its consistency round. One run of the protocol (a round
// r's attempt a) is bound to a [Context]; every key derivation, associated
// data and signature covers the context's encoding, so a message of another
// run, round or attempt does not verify. Learner ids are 0..N-1; learner u's
// Shamir x-coordinate is u+1.
//
//	Phase 0 Advertise   u sends fresh X25519 keys c_u (share encryption), s_u (masking)
//	                    and a fresh Ed25519 key; the server closes with U1, |U1| >= T.
//	Phase 1 ShareKeys   u draws a 32-byte self-mask seed b_u, splits s_u^SK and b_u into
//	                    T-of-|U1| Shamir shares and sends each v in U1 (u too) its pair of shares
//	                    under AES-256-GCM (key HKDF-SHA256(X25519(c_u, c_v)), associated data
//	                    context || u || v), with a SHA-256 commitment to each share; the
//	                    server closes with U2, |U2| >= T, and relays the boxes.
//	Phase 2 MaskedInput u sends y_u = x_u + PRG(b_u) + sum_{v in U2, v > u} PRG(s_uv)
//	                    - sum_{v in U2, v < u} PRG(s_uv); the server adds y_u into one running
//	                    sum and keeps no y_u; it closes with U3, |U3| >= T.
//	Phase 3 Consistency u signs context || U3 with its Ed25519 key; the server closes with U4.
//	Phase 4 Unmask      u checks T valid signatures on U3 and U3 a subset of U2, then reveals,
//	                    for each v in U2, its share of b_v if v is in U3 and of s_v^SK if not
//	                    (never both); the server checks each share against its commitment,
//	                    reconstructs, removes the masks and gets sum_{u in U3} x_u exactly.
//
// Fewer than T learners at any close fails the run with an error wrapping
// [ErrTooFew]. The context requires N/2 < T <= N: then two attempts of one
// round can never both be unmasked, provided every learner answers phase 4
// of a round in at most one attempt (the caller's learner state enforces
// that across [Client] values; one Client answers once). Against a server
// that pools its view with c learners this holds only when 2T > N + c: each
// colluder holds its own share of every secret of every attempt, so an
// attempt that failed in phase 4 after T - c honest answers is unmasked by
// the server all the same, and the N - T honest learners that did not
// answer, with the c colluders, can complete a second attempt
// (TestColludersUnmaskTwoAttempts: N = 5, T = 3, c = 1). A run states the
// c it assumes (plan.SecureAggregation.Colluders, ofl -colluders), and
// package plan refuses a T that does not withstand it (plan.CheckColluders).
// Within one attempt, a server that follows the protocol and pools its
// view with up to T - 1 colluders learns nothing beyond the sum. One that
// shows a learner's masked input as received to some learners and as
// dropped to others collects both of its secrets only when 2T <= N + c,
// the same limit (TestSplitViewsNeedTwoTAboveNPlusC, brute force).
//
// Departures from the paper, all on the safe side: a learner also seals a
// pair of shares for itself, relayed like the others, and reveals its own
// share of b_v or s_v^SK (its own v included) by the same rule, so that
// exactly T responders suffice; the server keeps a SHA-256 commitment to
// every share (context, dealer, holder and share hashed), so a forged or
// foreign phase-4 share is refused instead of silently corrupting the sum; a
// learner refuses a roster in which its own keys are not the ones it sent or
// in which two learners share a key (X25519 keys only in canonical encoding,
// below 2^255 - 19, so that an alias with the top bit set is not taken for
// another key; the aggregator refuses such keys too); both refuse an
// Ed25519 key that is not canonical, not on the curve, of small order
// (with the identity as key one signature verifies for every message) or
// of mixed order (outside the prime-order subgroup, which every genuine
// key is in: a key plus a small-order point verifies a signature for some
// messages only, and differently under cofactored verification).
//
// # Primitives
//
// The Go standard library, and filippo.io/edwards25519 for one check of
// an Ed25519 key (its order: crypto/ed25519 exposes no point arithmetic):
// crypto/ecdh (X25519), crypto/hkdf and
// crypto/sha256 (HKDF-SHA256), crypto/aes and crypto/cipher (AES-256-GCM for
// the shares, AES-256-CTR as the mask generator, its keystream read as
// little-endian uint64 and added), crypto/ed25519 for the consistency
// signatures. Shamir secret sharing is hand-written: no maintained Go
// implementation is within reach of the module (x/crypto has none; the
// HashiCorp Vault one is an internal package of a large module). It works
// byte-wise on 32-byte secrets over GF(2^8) with the AES polynomial
// x^8+x^4+x^3+x+1, with x-coordinates 1..N (N <= 255), random coefficients
// from the caller's io.Reader, and is tested against FIPS-197's published
// products and against brute-force interpolation.
//
// Every private key and seed is read from the io.Reader given to
// [NewClient] (crypto/rand.Reader in real use, a seeded reader in tests), so
// a run is reproducible under a seeded reader.
//
// # Messages and state
//
// Every message type has MarshalBinary and UnmarshalBinary with a versioned,
// bounded encoding: a truncated or hostile message is an error, never a
// panic or an allocation larger than the message itself. The [Aggregator]
// keeps O(d + N^2) memory whatever peers send and can be snapshot
// (MarshalBinary) after any call and restored ([RestoreAggregator]).
//
// [Run] drives a whole run in process, with learners dropping out by a
// [DropPlan] and a hook that sees everything the aggregator receives.
package secagg
