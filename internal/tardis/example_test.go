package tardis_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/gait-dev/gait/internal/tardis"
)

// The worked example of docs/emulate.md.
func Example() {
	// What a workload writes: stream 7 from offset 0.
	data := tardis.AppendGenerate(nil, 7, 0, 1<<20)

	// What HDFS might hand its disk: the stream cut into 512-byte chunks,
	// each followed by a 4-byte checksum.
	var framed []byte
	for c := 0; c < len(data); c += 512 {
		framed = append(framed, data[c:c+512]...)
		framed = binary.BigEndian.AppendUint32(framed, crc32.ChecksumIEEE(data[c:c+512]))
	}

	exts := tardis.Encode(framed)
	fmt.Println(len(exts), "extents")
	for _, e := range exts[:2] {
		if e.Synthetic() {
			fmt.Println("stream", e.Seed, "from", e.Offset, "for", e.Len)
		} else {
			fmt.Printf("literal % x\n", e.Lit)
		}
	}
	fmt.Println("round trip:", bytes.Equal(tardis.Decode(exts), framed))

	// A file: writes anywhere, overwrites, holes, reads of any range.
	var f tardis.File
	f.WriteAt(data[:300_000], 0)
	f.WriteAt(data[300_000:], 300_000)
	fmt.Println(len(f.Extents()), "extent")
	f.WriteAt([]byte("header"), 4096)
	fmt.Println(len(f.Extents()), "extents")
	f.Punch(8192, 100)
	buf := make([]byte, 4096)
	f.ReadAt(buf, 500_000)
	fmt.Println("read:", bytes.Equal(buf, data[500_000:504_096]))
	logical, physical := f.Stats()
	fmt.Println("logical", logical, "physical", physical)

	// The file's description, for a metadata store.
	meta := tardis.MarshalExtents(nil, f.Extents(), f.Size())
	exts2, size, _, err := tardis.UnmarshalExtents(meta)
	var g tardis.File
	g.SetExtents(exts2, size)
	fmt.Println(len(meta), "bytes of metadata,", err)
	// Output:
	// 4096 extents
	// stream 7 from 0 for 512
	// literal 52 15 28 ac
	// round trip: true
	// 1 extent
	// 3 extents
	// read: true
	// logical 1048576 physical 134
	// 63 bytes of metadata, <nil>
}
