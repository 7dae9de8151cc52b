package importer

import (
	"encoding/binary"
	"fmt"
	"math"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// storageFor reports which data slice of a Tensor holds element type dt:
// 'f' for F32, 'd' for F64, 'i' for I64.
func storageFor(dt DataType) byte {
	switch dt {
	case onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_FLOAT16, onnxpb.TensorProto_BFLOAT16:
		return 'f'
	case onnxpb.TensorProto_DOUBLE:
		return 'd'
	}
	return 'i'
}

// checkStorage checks that t holds its values in the slice its element
// type dt needs, with as many values as its shape.
func checkStorage(t *Tensor, dt DataType) error {
	n := t.Len()
	var have int
	switch storageFor(dt) {
	case 'f':
		if t.F32 == nil && n > 0 {
			return fmt.Errorf("element type %v needs float32 values (F32)", dt)
		}
		have = len(t.F32)
	case 'd':
		if t.F64 == nil && n > 0 {
			return fmt.Errorf("element type %v needs float64 values (F64)", dt)
		}
		have = len(t.F64)
	default:
		if t.I64 == nil && n > 0 {
			return fmt.Errorf("element type %v needs int64 values (I64)", dt)
		}
		have = len(t.I64)
	}
	if have != n {
		return fmt.Errorf("has %d values, shape %v needs %d", have, t.Shape, n)
	}
	return nil
}

// rawBytes encodes t's values as little-endian raw_data of element type dt.
// t must pass checkStorage for dt.
func rawBytes(t *Tensor, dt DataType) []byte {
	size := elemSize[dt]
	n := t.Len()
	b := make([]byte, n*size)
	le := binary.LittleEndian
	for i := 0; i < n; i++ {
		p := b[i*size:]
		switch dt {
		case onnxpb.TensorProto_FLOAT:
			le.PutUint32(p, math.Float32bits(t.F32[i]))
		case onnxpb.TensorProto_FLOAT16:
			le.PutUint16(p, floatToHalf(t.F32[i]))
		case onnxpb.TensorProto_BFLOAT16:
			le.PutUint16(p, floatToBFloat16(t.F32[i]))
		case onnxpb.TensorProto_DOUBLE:
			le.PutUint64(p, math.Float64bits(t.F64[i]))
		default:
			v := t.I64[i]
			switch size {
			case 1:
				p[0] = byte(v)
			case 2:
				le.PutUint16(p, uint16(v))
			case 4:
				le.PutUint32(p, uint32(v))
			case 8:
				le.PutUint64(p, uint64(v))
			}
		}
	}
	return b
}

// setTyped stores t's values in the typed field of tp that holds dt,
// clearing raw_data and the other typed fields.
func setTyped(tp *onnxpb.TensorProto, t *Tensor, dt DataType) {
	tp.RawData, tp.FloatData, tp.DoubleData, tp.Int32Data, tp.Int64Data, tp.Uint64Data = nil, nil, nil, nil, nil, nil
	n := t.Len()
	switch dt {
	case onnxpb.TensorProto_FLOAT:
		tp.FloatData = append(make([]float32, 0, n), t.F32...)
	case onnxpb.TensorProto_DOUBLE:
		tp.DoubleData = append(make([]float64, 0, n), t.F64...)
	case onnxpb.TensorProto_FLOAT16, onnxpb.TensorProto_BFLOAT16:
		tp.Int32Data = make([]int32, n)
		for i, v := range t.F32 {
			if dt == onnxpb.TensorProto_FLOAT16 {
				tp.Int32Data[i] = int32(floatToHalf(v))
			} else {
				tp.Int32Data[i] = int32(floatToBFloat16(v))
			}
		}
	case onnxpb.TensorProto_INT64:
		tp.Int64Data = append(make([]int64, 0, n), t.I64...)
	case onnxpb.TensorProto_UINT32, onnxpb.TensorProto_UINT64:
		tp.Uint64Data = make([]uint64, n)
		for i, v := range t.I64 {
			if dt == onnxpb.TensorProto_UINT32 {
				v = int64(uint32(v))
			}
			tp.Uint64Data[i] = uint64(v)
		}
	default:
		tp.Int32Data = make([]int32, n)
		for i, v := range t.I64 {
			tp.Int32Data[i] = int32(wrapInt(v, dt))
		}
	}
}

// wrapInt narrows v to the range of integer type dt, as a C cast would.
func wrapInt(v int64, dt DataType) int64 {
	switch dt {
	case onnxpb.TensorProto_INT8:
		return int64(int8(v))
	case onnxpb.TensorProto_UINT8:
		return int64(uint8(v))
	case onnxpb.TensorProto_INT16:
		return int64(int16(v))
	case onnxpb.TensorProto_UINT16:
		return int64(uint16(v))
	case onnxpb.TensorProto_INT32:
		return int64(int32(v))
	case onnxpb.TensorProto_UINT32:
		return int64(uint32(v))
	case onnxpb.TensorProto_BOOL:
		if v != 0 {
			return 1
		}
		return 0
	}
	return v
}

// EncodeTensor returns a TensorProto holding t (name, element type t.Type,
// shape, values in raw_data). It fails if t's values do not match its type
// and shape.
func EncodeTensor(t *Tensor) (*onnxpb.TensorProto, error) {
	dt := t.Type
	if _, ok := elemSize[dt]; !ok {
		return nil, fmt.Errorf("importer: tensor %q: unsupported element type %v", t.Name, dt)
	}
	if err := checkStorage(t, dt); err != nil {
		return nil, fmt.Errorf("importer: tensor %q: %w", t.Name, err)
	}
	tp := &onnxpb.TensorProto{DataType: proto.Int32(int32(dt)), RawData: rawBytes(t, dt)}
	if t.Name != "" {
		tp.Name = &t.Name
	}
	tp.Dims = make([]int64, len(t.Shape))
	for i, d := range t.Shape {
		tp.Dims[i] = int64(d)
	}
	return tp, nil
}

// floatToHalf rounds f to the nearest IEEE 754 binary16 value (ties to
// even); NaN payloads keep their top bits so that halfToFloat round-trips.
func floatToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	frac := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		h := sign | 0x7c00 | uint16(frac>>13)
		if frac != 0 && frac>>13 == 0 {
			h |= 0x200 // keep it a NaN
		}
		return h
	case exp-127+15 >= 0x1f: // overflow
		return sign | 0x7c00
	case exp-127+15 <= 0: // subnormal or zero in half precision
		e := exp - 127 + 15
		if e < -10 {
			return sign
		}
		m := frac | 0x800000
		shift := uint32(14 - e)
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(exp-127+15)<<10 | frac>>13
	rem := frac & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to Inf: correct
	}
	return sign | uint16(h)
}

// floatToBFloat16 rounds f to the nearest bfloat16 (ties to even).
func floatToBFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	if f != f { // NaN: truncate, keep it a NaN
		h := uint16(b >> 16)
		if h&0x7f == 0 {
			h |= 0x40
		}
		return h
	}
	rem := b & 0xffff
	h := b >> 16
	if rem > 0x8000 || (rem == 0x8000 && h&1 == 1) {
		h++
	}
	return uint16(h)
}
