package testpki

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"strconv"
	"sync"
	"testing"
)

// Certificates issued from several goroutines at once (as the fednet and
// ofl tests do for their learners) get distinct serial numbers; run with
// -race to check the locking.
func TestIssueConcurrent(t *testing.T) {
	dir := t.TempDir()
	ca := New(t, dir, "ca")
	const k = 8
	files := make([]string, k)
	var wg sync.WaitGroup
	for i := range k {
		wg.Go(func() { files[i], _ = ca.Issue(t, "learner-"+strconv.Itoa(i), false) })
	}
	wg.Wait()
	seen := map[string]bool{"1": true} // the CA's own
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := pem.Decode(data)
		if b == nil {
			t.Fatalf("%s: no PEM block", f)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		s := c.SerialNumber.String()
		if seen[s] {
			t.Errorf("serial %s issued twice", s)
		}
		seen[s] = true
	}
}
