package fednet

import (
	"bytes"
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dpmf/dpmf/internal/testutil"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// Hostile peers, third review (docs/distributed.md, "Security model"):
// what hostile_plain_test.go, hostile_secure_test.go and flood_test.go
// leave out.

// A witness whose run identity is not a run identity (a peer's bytes, up
// to the 1 MiB message limit) is refused without echoing them: the
// refusal, its log line and its typed detail stay short. The server wrote
// the bytes in hex into the status message, the ErrorInfo detail and the
// log line, 2 MiB each (measured: a 2 MiB message, and 40 MiB of log for
// 20 calls), so that the log's rate limit (lines, not bytes) let one peer
// write 20 MiB of log a second and each such call, refused before any call
// limit applies, held about four times its request while it was answered.
// A 16-byte identity of another run is still refused with the typed
// detail (TestOtherRunRefusalTyped), and the run goes on.
func TestWitnessOfHugeRunNotEchoed(t *testing.T) {
	r := newRun(t, 2, 2, 1, 3)
	var log testutil.SyncBuffer
	opt := r.options(t.TempDir(), &log)
	s := serve(t, opt, nil)
	cl := rawClient(t, s.addr)
	c := firstChunk(t, cl, 0)
	huge := bytes.Repeat([]byte{0xab}, MaxMsgSize-4<<10)
	const calls = 20
	for k := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		round := int32(0)
		stream, err := cl.GetModel(ctx, &flv1.GetModelRequest{Learner: 0, SeenRound: &round, SeenRun: huge, SeenDigest: c.GetDigest()})
		if err == nil {
			_, err = stream.Recv()
		}
		cancel()
		if code := status.Code(err); code == codes.OK {
			t.Fatalf("call %d: a witness of a %d-byte run was taken", k, len(huge))
		}
		st := status.Convert(err)
		size := len(st.Message())
		for _, d := range st.Proto().GetDetails() {
			size += len(d.GetValue())
		}
		if size > 1<<10 {
			t.Fatalf("call %d: the refusal holds %d bytes (message and details), want at most 1 KiB: %.200s...", k, size, st.Message())
		}
		if k == 0 {
			t.Logf("refused: %v: %.300s", st.Code(), st.Message())
		}
	}
	if n := len(log.String()); n > calls<<10 {
		t.Errorf("the log holds %d bytes after %d refused witnesses, want at most 1 KiB each", n, calls)
	}
	want := r.simulate(t, nil)
	_, errs := runLearners(t, r, s.addr, []int{0, 1}, nil)
	requireNoErrors(t, errs)
	if err := <-s.errc; err != nil {
		t.Fatalf("server: %v", err)
	}
	requireSameModels(t, readRounds(t, opt.Dir, r.R), want)
}
