// Package zkwire is ZooKeeper's wire format (jute's binary archive) for both
// ends of a connection: go-zookeeper/zk v1.0.4's codec (structs.go,
// constants.go; BSD-3-Clause, LICENSE), exported and extended with what a
// server needs. README.gait.md lists what changed.
package zkwire

import (
	"encoding/binary"
	"errors"
	"reflect"
	"runtime"
	"strings"
)

var (
	// ErrUnhandledFieldType: a struct field jute has no encoding for.
	ErrUnhandledFieldType = errors.New("zkwire: unhandled field type")
	// ErrPtrExpected: Encode and Decode take a non-nil pointer.
	ErrPtrExpected = errors.New("zkwire: encode/decode expect a non-nil pointer to struct")
	// ErrShortBuffer: the packet ends before the record does.
	ErrShortBuffer = errors.New("zkwire: buffer too small")
	// ErrBadLength: a string, buffer or vector claims a negative or absurd length.
	ErrBadLength = errors.New("zkwire: bad length")
)

// outOfRange says whether a runtime error is a read or write past the
// buffer's end: the record is longer than the packet.
func outOfRange(e runtime.Error) bool {
	m := e.Error()
	return strings.HasPrefix(m, "runtime error: slice bounds out of range") || strings.HasPrefix(m, "runtime error: index out of range")
}

type decoder interface {
	Decode(buf []byte) (int, error)
}

type encoder interface {
	Encode(buf []byte) (int, error)
}

// Decode reads the record st points to from buf and says how many bytes it took.
func Decode(buf []byte, st any) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(runtime.Error); ok && outOfRange(e) {
				err = ErrShortBuffer
			} else {
				panic(r)
			}
		}
	}()
	v := reflect.ValueOf(st)
	if v.Kind() != reflect.Ptr || v.IsNil() {
		return 0, ErrPtrExpected
	}
	// Without its spare capacity: slicing past the length but within the
	// capacity is legal Go, and would read a reused buffer's stale bytes
	// as the end of a record the packet cut short.
	return decodeValue(buf[:len(buf):len(buf)], v)
}

func decodeValue(buf []byte, v reflect.Value) (int, error) {
	rv := v
	kind := v.Kind()
	if kind == reflect.Ptr {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
		kind = v.Kind()
	}

	n := 0
	switch kind {
	default:
		return n, ErrUnhandledFieldType
	case reflect.Struct:
		if de, ok := rv.Interface().(decoder); ok {
			return de.Decode(buf)
		} else if v.CanAddr() {
			if de, ok := v.Addr().Interface().(decoder); ok {
				return de.Decode(buf)
			}
		}
		for i := 0; i < v.NumField(); i++ {
			n2, err := decodeValue(buf[n:], v.Field(i))
			n += n2
			if err != nil {
				return n, err
			}
		}
	case reflect.Bool:
		v.SetBool(buf[n] != 0)
		n++
	case reflect.Int32:
		v.SetInt(int64(int32(binary.BigEndian.Uint32(buf[n : n+4]))))
		n += 4
	case reflect.Int64:
		v.SetInt(int64(binary.BigEndian.Uint64(buf[n : n+8])))
		n += 8
	case reflect.String:
		ln := int(int32(binary.BigEndian.Uint32(buf[n : n+4])))
		if ln < 0 {
			ln = 0 // jute writes a null string as length -1
		}
		v.SetString(string(buf[n+4 : n+4+ln]))
		n += 4 + ln
	case reflect.Slice:
		switch v.Type().Elem().Kind() {
		default:
			count := int(int32(binary.BigEndian.Uint32(buf[n : n+4])))
			n += 4
			if count < 0 {
				v.Set(reflect.Zero(v.Type())) // a null vector
				break
			}
			if count > len(buf)-n {
				return n, ErrBadLength // every element takes at least a byte
			}
			values := reflect.MakeSlice(v.Type(), count, count)
			v.Set(values)
			for i := 0; i < count; i++ {
				n2, err := decodeValue(buf[n:], values.Index(i))
				n += n2
				if err != nil {
					return n, err
				}
			}
		case reflect.Uint8:
			ln := int(int32(binary.BigEndian.Uint32(buf[n : n+4])))
			if ln < 0 {
				n += 4
				v.SetBytes(nil)
			} else if ln > len(buf)-n-4 {
				return n, ErrShortBuffer // before allocating what the packet cannot hold
			} else {
				bytes := make([]byte, ln)
				copy(bytes, buf[n+4:n+4+ln])
				v.SetBytes(bytes)
				n += 4 + ln
			}
		}
	}
	return n, nil
}

// Encode writes the record st points to into buf and says how many bytes
// it took; ErrShortBuffer if buf is too small.
func Encode(buf []byte, st any) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(runtime.Error); ok && outOfRange(e) {
				err = ErrShortBuffer
			} else {
				panic(r)
			}
		}
	}()
	v := reflect.ValueOf(st)
	if v.Kind() != reflect.Ptr || v.IsNil() {
		return 0, ErrPtrExpected
	}
	return encodeValue(buf, v)
}

// Append encodes the records one after the other at the end of dst.
func Append(dst []byte, records ...any) ([]byte, error) {
	for _, r := range records {
		size := 256
		for {
			if cap(dst)-len(dst) < size {
				grown := make([]byte, len(dst), len(dst)+size)
				copy(grown, dst)
				dst = grown
			}
			n, err := Encode(dst[len(dst):cap(dst)], r)
			if errors.Is(err, ErrShortBuffer) {
				size *= 4
				continue
			}
			if err != nil {
				return dst, err
			}
			dst = dst[:len(dst)+n]
			break
		}
	}
	return dst, nil
}

func encodeValue(buf []byte, v reflect.Value) (int, error) {
	rv := v
	for v.Kind() == reflect.Ptr || v.Kind() == reflect.Interface {
		v = v.Elem()
	}

	n := 0
	switch v.Kind() {
	default:
		return n, ErrUnhandledFieldType
	case reflect.Struct:
		if en, ok := rv.Interface().(encoder); ok {
			return en.Encode(buf)
		} else if en, ok := v.Interface().(encoder); ok {
			return en.Encode(buf)
		}
		for i := 0; i < v.NumField(); i++ {
			n2, err := encodeValue(buf[n:], v.Field(i))
			n += n2
			if err != nil {
				return n, err
			}
		}
	case reflect.Bool:
		if v.Bool() {
			buf[n] = 1
		} else {
			buf[n] = 0
		}
		n++
	case reflect.Int32:
		binary.BigEndian.PutUint32(buf[n:n+4], uint32(v.Int()))
		n += 4
	case reflect.Int64:
		binary.BigEndian.PutUint64(buf[n:n+8], uint64(v.Int()))
		n += 8
	case reflect.String:
		str := v.String()
		binary.BigEndian.PutUint32(buf[n:n+4], uint32(len(str)))
		copy(buf[n+4:n+4+len(str)], str)
		n += 4 + len(str)
	case reflect.Slice:
		switch v.Type().Elem().Kind() {
		default:
			count := v.Len()
			startN := n
			n += 4
			for i := 0; i < count; i++ {
				n2, err := encodeValue(buf[n:], v.Index(i))
				n += n2
				if err != nil {
					return n, err
				}
			}
			binary.BigEndian.PutUint32(buf[startN:startN+4], uint32(count))
		case reflect.Uint8:
			if v.IsNil() {
				binary.BigEndian.PutUint32(buf[n:n+4], uint32(0xffffffff))
				n += 4
			} else {
				bytes := v.Bytes()
				binary.BigEndian.PutUint32(buf[n:n+4], uint32(len(bytes)))
				copy(buf[n+4:n+4+len(bytes)], bytes)
				n += 4 + len(bytes)
			}
		}
	}
	return n, nil
}
