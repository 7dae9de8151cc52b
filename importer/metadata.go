package importer

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// metadataPropsField is ModelProto's field number of metadata_props.
const metadataPropsField = 14

// maxMetadataEntry bounds one metadata entry read by ReadMetadata.
const maxMetadataEntry = 64 << 20

// ReadMetadata returns the metadata_props of the ONNX model file at path
// without reading its graph: the file's top-level fields are walked,
// others sought over, and only metadata entries decoded, so a model of
// any size costs a few reads. A file that is not a model gives an error
// naming it.
func ReadMetadata(path string) (map[string]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("importer: %s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	bad := func(why string) error { return fmt.Errorf("importer: %s: not an ONNX model (%s)", path, why) }
	r := bufio.NewReader(f)
	out := map[string]string{}
	for {
		tag, err := binary.ReadUvarint(r)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, bad("a field tag cannot be read")
		}
		num, typ := protowire.Number(tag>>3), protowire.Type(tag&7)
		var skip uint64
		switch typ {
		case protowire.VarintType:
			_, err = binary.ReadUvarint(r)
		case protowire.Fixed32Type:
			skip = 4
		case protowire.Fixed64Type:
			skip = 8
		case protowire.BytesType:
			skip, err = binary.ReadUvarint(r)
		default:
			return nil, bad(fmt.Sprintf("field %d has wire type %d", num, typ))
		}
		switch {
		case err != nil:
			return nil, bad("a field cannot be read")
		case skip > uint64(st.Size()):
			return nil, bad("a field longer than the file")
		case num == metadataPropsField && typ == protowire.BytesType:
			if skip > maxMetadataEntry {
				return nil, bad("a metadata entry over 64 MiB")
			}
			b := make([]byte, skip)
			if _, err := io.ReadFull(r, b); err != nil {
				return nil, bad("a metadata entry is cut short")
			}
			var e onnxpb.StringStringEntryProto
			if err := proto.Unmarshal(b, &e); err != nil {
				return nil, bad("a damaged metadata entry")
			}
			out[e.GetKey()] = e.GetValue()
		case skip <= uint64(r.Buffered()):
			r.Discard(int(skip))
		default:
			// A graph holds the weights: seek over it, never read it.
			cur, err := f.Seek(0, io.SeekCurrent)
			if err != nil {
				return nil, err
			}
			at := cur - int64(r.Buffered()) + int64(skip)
			if at > st.Size() {
				return nil, bad("cut short")
			}
			if _, err := f.Seek(at, io.SeekStart); err != nil {
				return nil, err
			}
			r.Reset(f)
		}
	}
	return out, nil
}

// LooksLikeModel reports whether the file at path starts as an ONNX model
// does: ModelProto's ir_version (field 1, a small varint) first, then
// another of its fields. Every exporter writes ir_version first; a raw
// weights file (a model's external data), a log or a picture does not
// start this way.
func LooksLikeModel(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return false
	}
	// 0x08: field 1, varint; ir_version 1..127 fits one byte; the next
	// tag is one of ModelProto's fields 2..8, 14 or 20 as length-delimited
	// or varint (producer_name 0x12, producer_version 0x1a, domain 0x22,
	// model_version 0x28, doc_string 0x32, graph 0x3a, opset_import 0x42,
	// metadata_props 0x72, training_info 0xa2 0x01, functions 0xca 0x01).
	if b[0] != 0x08 || b[1] == 0 || b[1] >= 0x80 {
		return false
	}
	switch b[2] {
	case 0x12, 0x1a, 0x22, 0x28, 0x32, 0x3a, 0x42, 0x72, 0xa2, 0xca:
		return true
	}
	return false
}
