package natscluster

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/nats-io/nats.go/jetstream"
)

// ForgeManifest builds a manifest as a forger with access to the buckets
// could: any version, size, chunk count and chunk lengths, with a valid
// trailer.
func ForgeManifest(version byte, size, count uint64, lens []uint64) []byte {
	b := append([]byte(manifestMagic), version)
	b = binary.AppendUvarint(b, size)
	b = binary.AppendUvarint(b, count)
	for _, l := range lens {
		b = binary.AppendUvarint(b, l)
		b = binary.AppendUvarint(b, 1)
		b = append(b, make([]byte, 32)...)
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

// RecordSum is the record's checksum of b.
func RecordSum(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// lossyKV is a KeyValue whose Update answers are lost as planned: for
// each call in plan, whether the update is applied; either way the call
// returns a timeout, as when a NATS server's answer never arrives. Calls
// past the plan go through.
type lossyKV struct {
	jetstream.KeyValue
	plan []bool
}

func (k *lossyKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if len(k.plan) == 0 {
		return k.KeyValue.Update(ctx, key, value, rev)
	}
	apply := k.plan[0]
	k.plan = k.plan[1:]
	if apply {
		if _, err := k.KeyValue.Update(ctx, key, value, rev); err != nil {
			return 0, err
		}
	}
	return 0, context.DeadlineExceeded
}

// LoseUpdateAnswers makes the next session record updates of c lose
// their answers, each applied or not as plan says.
func LoseUpdateAnswers(c *Cluster, plan ...bool) {
	c.sessions = &lossyKV{KeyValue: c.sessions, plan: plan}
}
