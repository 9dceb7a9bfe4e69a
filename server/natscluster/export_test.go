package natscluster

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
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
