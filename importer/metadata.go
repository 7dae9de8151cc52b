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
// others skipped over, and only metadata entries decoded, so a model of
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
		default:
			if n, err := r.Discard(int(skip)); err != nil || uint64(n) != skip {
				return nil, bad("cut short")
			}
		}
	}
	return out, nil
}
