// Package mechanism turns a factorization A = B C into a stream of per-round
// Gaussian noise vectors for online private training with correlated noise.
package mechanism
