package wal

import (
	"fmt"
	"io"
	"testing"
)

// BenchmarkAppendSync measures group commit: one op is `records` Appends of
// a 128-byte payload (a typical small setData transaction) and one Sync,
// i.e. one write(2) and one fdatasync, on the disk under the test's temp
// directory. prealloc=false shows what preallocation buys.
func BenchmarkAppendSync(b *testing.B) {
	for _, records := range []int{1, 8, 64} {
		for _, prealloc := range []bool{true, false} {
			b.Run(fmt.Sprintf("records=%d/prealloc=%t", records, prealloc), func(b *testing.B) {
				benchAppendSync(b, records, prealloc)
			})
		}
	}
}

func benchAppendSync(b *testing.B, records int, prealloc bool) {
	s, err := Open(Options{Dir: b.TempDir(), Logger: quietLogger})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Recover(); err != nil {
		b.Fatal(err)
	}
	s.noPrealloc = !prealloc
	data := make([]byte, 128)
	zxid := int64(0)
	b.SetBytes(int64(records * (recHeaderSize + len(data))))
	b.ReportAllocs()
	for b.Loop() {
		for range records {
			zxid++
			if err := s.Append(zxid, data); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/sec, "syncs/s")
	b.ReportMetric(float64(b.N*records)/sec, "records/s")
}

// BenchmarkRecover measures startup: recovering 100k logged records of 128
// bytes (one ZooKeeper snapCount's worth) in 64 MiB segments.
func BenchmarkRecover(b *testing.B) {
	dir := b.TempDir()
	s, err := Open(Options{Dir: dir, NoSync: true, Logger: quietLogger})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Recover(); err != nil {
		b.Fatal(err)
	}
	const n = 100_000
	data := make([]byte, 128)
	for z := int64(1); z <= n; z++ {
		if err := s.Append(z, data); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s, err := Open(Options{Dir: dir, NoSync: true, Logger: quietLogger})
		if err != nil {
			b.Fatal(err)
		}
		rec, err := s.Recover()
		if err != nil || len(rec.Records) != n {
			b.Fatalf("recovered %d records, err %v", len(rec.Records), err)
		}
		s.Close()
	}
}

// BenchmarkWriteSnapshot measures writing a 16 MiB snapshot, fsync and
// rename included.
func BenchmarkWriteSnapshot(b *testing.B) {
	s, err := Open(Options{Dir: b.TempDir(), Logger: quietLogger})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Recover(); err != nil {
		b.Fatal(err)
	}
	const size = 16 << 20
	block := make([]byte, 4096)
	b.SetBytes(size)
	zxid := int64(0)
	for b.Loop() {
		zxid++
		err := s.WriteSnapshot(zxid, func(w io.Writer) error {
			for range size / len(block) {
				if _, err := w.Write(block); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if zxid > 3 {
			if err := s.Purge(3); err != nil {
				b.Fatal(err)
			}
		}
	}
}
