// Package heapdump reads the heap dumps Go's runtime/debug.WriteHeapDump writes and answers
// what pprof cannot: which objects keep an object alive. A dump lists every heap object with
// the positions of its pointers, the roots (globals, goroutine stack frames, finalizers) and,
// for objects the memory profiler sampled, their allocation stack. Reachability walks
// pointers from the roots; an object is named by its allocation stack.
package heapdump

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
)

// Object is one heap object: its address, size and the pointer values it holds.
type Object struct {
	Addr, Size uint64
	Ptrs       []uint64
}

// Root is a set of pointers the garbage collector starts from.
type Root struct {
	Desc string // "data", "bss", "frame:<function>", "finalizer" or "other:<description>"
	Ptrs []uint64
}

// Dump is a parsed heap dump.
type Dump struct {
	Objects []Object // sorted by address
	Roots   []Root
	// Stacks maps a profile bucket to its allocation stack (innermost first);
	// Sampled maps a sampled object's address to its bucket.
	Stacks  map[uint64][]string
	Sampled map[uint64]uint64
	// Goroutines counts goroutines; Frames counts stack frames by function.
	Goroutines int
	Frames     map[string]int
}

const header = "go1.7 heap dump\n"

// Record tags of the dump format (runtime/heapdump.go).
const (
	tagEOF = iota
	tagObject
	tagOtherRoot
	tagType
	tagGoroutine
	tagStackFrame
	tagParams
	tagFinalizer
	tagItab
	tagOSThread
	tagMemStats
	tagQueuedFinalizer
	tagData
	tagBSS
	tagDefer
	tagPanic
	tagMemProf
	tagAllocSample
)

type reader struct {
	r   *bufio.Reader
	err error
}

func (r *reader) uint() uint64 {
	if r.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(r.r)
	r.err = err
	return v
}

func (r *reader) skip(n int) {
	for i := 0; i < n; i++ {
		r.uint()
	}
}

func (r *reader) bytes() []byte {
	n := r.uint()
	if r.err != nil {
		return nil
	}
	if n > 1<<32 {
		r.err = fmt.Errorf("record of %d bytes", n)
		return nil
	}
	b := make([]byte, n)
	_, r.err = io.ReadFull(r.r, b)
	return b
}

// pointers reads a field list and returns the non-nil pointer values at its offsets in content.
func (r *reader) pointers(content []byte) []uint64 {
	var out []uint64
	for r.err == nil {
		if kind := r.uint(); kind == 0 {
			break
		}
		off := r.uint()
		if off+8 <= uint64(len(content)) {
			if v := binary.LittleEndian.Uint64(content[off:]); v != 0 {
				out = append(out, v)
			}
		}
	}
	return out
}

// Read parses a heap dump (little-endian, 64-bit pointers).
func Read(in io.Reader) (*Dump, error) {
	r := &reader{r: bufio.NewReaderSize(in, 1<<20)}
	hdr := make([]byte, len(header))
	if _, err := io.ReadFull(r.r, hdr); err != nil || string(hdr) != header {
		return nil, errors.New("not a Go heap dump (header)")
	}
	d := &Dump{Stacks: map[uint64][]string{}, Sampled: map[uint64]uint64{}, Frames: map[string]int{}}
	for r.err == nil {
		tag := r.uint()
		if r.err != nil {
			break
		}
		if tag == tagEOF {
			sort.Slice(d.Objects, func(i, j int) bool { return d.Objects[i].Addr < d.Objects[j].Addr })
			return d, nil
		}
		if err := d.record(r, tag); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("read heap dump: %w", r.err)
}

// record reads one record of the given tag into d.
func (d *Dump) record(r *reader, tag uint64) error {
	switch tag {
	case tagObject:
		addr := r.uint()
		c := r.bytes()
		d.Objects = append(d.Objects, Object{Addr: addr, Size: uint64(len(c)), Ptrs: r.pointers(c)})
	case tagOtherRoot:
		desc := string(r.bytes())
		d.Roots = append(d.Roots, Root{Desc: "other:" + desc, Ptrs: []uint64{r.uint()}})
	case tagType:
		r.skip(2)
		r.bytes()
		r.uint()
	case tagGoroutine:
		d.Goroutines++
		r.skip(8)
		r.bytes()
		r.skip(4)
	case tagStackFrame:
		r.skip(3)
		c := r.bytes()
		r.skip(3)
		name := string(r.bytes())
		d.Frames[name]++
		d.Roots = append(d.Roots, Root{Desc: "frame:" + name, Ptrs: r.pointers(c)})
	case tagParams:
		r.skip(4)
		r.bytes()
		r.bytes()
		r.uint()
	case tagFinalizer, tagQueuedFinalizer:
		obj := r.uint()
		r.skip(4)
		d.Roots = append(d.Roots, Root{Desc: "finalizer", Ptrs: []uint64{obj}})
	case tagItab:
		r.skip(2)
	case tagOSThread:
		r.skip(3)
	case tagMemStats:
		r.skip(24 + 256 + 1)
	case tagData, tagBSS:
		r.uint()
		c := r.bytes()
		d.Roots = append(d.Roots, Root{Desc: map[uint64]string{tagData: "data", tagBSS: "bss"}[tag], Ptrs: r.pointers(c)})
	case tagDefer:
		r.skip(7)
	case tagPanic:
		r.skip(6)
	case tagMemProf:
		d.memProf(r)
	case tagAllocSample:
		addr := r.uint()
		d.Sampled[addr] = r.uint()
	default:
		return fmt.Errorf("unknown heap dump record %d", tag)
	}
	return r.err
}

// memProf reads one profile bucket: its stack of (function, file, line).
func (d *Dump) memProf(r *reader) {
	id := r.uint()
	r.uint() // size
	n := r.uint()
	var frames []string
	for i := uint64(0); i < n && r.err == nil; i++ {
		frames = append(frames, string(r.bytes()))
		r.bytes()
		r.uint()
	}
	r.skip(2) // allocs, frees
	d.Stacks[id] = frames
}
