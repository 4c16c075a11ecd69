package cluster

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// ErrCorruptLog is returned by NewNode when the raft log is damaged
// before its tail: entries the node acknowledged are unreadable and no
// recovery could keep the log whole. The message says how to recover.
var ErrCorruptLog = errors.New("cluster: the raft log is corrupt")

// Checking the WAL before it opens.
//
// raft-wal (v0.4.2, segment/writer.go recoverTail) reads the tail segment
// to its last commit frame and checks only the last batch's CRC: a torn
// or overwritten tail is cut back silently, so a node could come back
// shorter than what it had fsynced and acknowledged with no trace but
// raft's "failed to get previous log". It reads sealed segments only
// through their index and never checks a CRC there, so damage in the
// middle of the log is served to raft as whatever the bytes decode to.
//
// checkWAL reads every segment frame by frame before raft-wal opens the
// log and checks each batch against its commit frame's CRC (the format
// in segment/format.go: a 32-byte file header, then 8-byte aligned
// frames; a commit frame's CRC-32C covers the bytes since the previous
// commit frame, the file header included in the first):
//   - a sealed segment must hold every batch up to its index frame: if
//     not, NewNode refuses to start with ErrCorruptLog and how to
//     recover;
//   - for the tail segment, what it held after the damage (entry frames
//     found past it, by index) is reported, once the WAL has opened and
//     says where it cut, at ERROR as a corrupt or torn tail with the
//     index range cut. The node starts: raft fetches the entries again
//     from the leader.
//   - a segment the meta store lists as sealed whose index frame is not
//     there, while every entry up to the recorded end verifies, was sealed
//     by a truncation whose first attempt tore its index frame (raft-wal's
//     ForceSeal keeps the index offset of a failed write and reports the
//     seal done when asked again; walLog reopens the WAL after a failed
//     truncation so that a running node does not do this, but a node that
//     crashed in between has it on disk): the index frame is written again
//     from the entries' offsets, which is what the seal would have written;
//   - a tail holding an index frame after its last commit frame (a seal
//     whose write tore) is cleared from there: raft-wal's recovery takes
//     any index frame as a seal, committed or not, and the segment would
//     then refuse appends, or be recorded as sealed without its index;
//   - a tail whose index frame is committed but that the meta store still
//     lists as unsealed (the segment filled, and recording the rotation
//     failed, e.g. on a full disk) would refuse every later append
//     (raft-wal's ErrSealed, and again after a restart): the rotation is
//     recorded here, as raft-wal's own rotation would have.

// corruptAdvice is how to recover from a log damaged before its tail.
const corruptAdvice = "this node cannot rebuild its log; to recover, stop it, remove its data directory " +
	"and start it again to rejoin the cluster (--join a member's raft address, or be added with `locknode join`), " +
	"or prepare the data directory from a backup with `locknode snapshot restore`"

// Frame types and sizes of raft-wal's segment format (segment/format.go).
const (
	walFileHeaderLen  = 32
	walFrameHeaderLen = 8
	walFrameEntry     = 1
	walFrameIndex     = 2
	walFrameCommit    = 3
	walMaxEntrySize   = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// segmentScan is what one segment file holds, read frame by frame.
type segmentScan struct {
	entries     uint64   // entry frames in batches whose CRC matches, from the start
	offsets     []uint32 // the file offsets of those entry frames
	end         int64    // the offset after the last verified commit frame
	tornIndex   int64    // the offset after an index frame written past end, with no commit frame (0: none)
	sealed      bool     // a verified batch holds the index frame
	indexStart  uint64   // file offset of the index array (after its frame header)
	uncommitted uint64   // entry frames after the last verified commit
	damage      int64    // offset where reading stopped on bytes that are not the zeros after the last write; -1 when none
	why         string   // what was found at damage
	beyond      uint64   // highest entry index found in frames after damage (0: none)
}

// openSegment opens the segment file at path and reads its file header;
// the file is nil (and the error too) when not even that was written.
func openSegment(disk Disk, path string) (File, *bufio.Reader, []byte, error) {
	f, err := disk.Open(path, false)
	if err != nil {
		return nil, nil, nil, err
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, math.MaxInt64), 1<<20)
	hdr := make([]byte, walFileHeaderLen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		f.Close()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, nil, nil, nil
		}
		return nil, nil, nil, err
	}
	return f, r, hdr, nil
}

// scanSegment reads the segment at path, whose first entry is
// info.BaseIndex.
func scanSegment(disk Disk, path string, info types.SegmentInfo) (segmentScan, error) {
	sc := segmentScan{damage: -1}
	f, r, hdr, err := openSegment(disk, path)
	if f == nil || err != nil {
		return sc, err // f nil, err nil: nothing written yet
	}
	defer f.Close()
	crc := crc32.Update(0, castagnoli, hdr)
	off := int64(walFileHeaderLen)
	var pending uint64 // entry frames since the last verified commit
	var pendingOffs []uint32
	sc.end = walFileHeaderLen
	indexAt := uint64(0)
	buf := make([]byte, 64<<10)
	stop := func(why string) {
		sc.damage, sc.why = off, why
	}
	// Each case either continues with the next frame or stops the scan
	// (a break inside a case leaves the switch; the break after it, the
	// loop).
	for {
		var fh [walFrameHeaderLen]byte
		if _, err := io.ReadFull(r, fh[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				break
			}
			return sc, err
		}
		typ, val := fh[0], binary.LittleEndian.Uint32(fh[4:8])
		if typ == 0 && val == 0 && fh[1] == 0 && fh[2] == 0 && fh[3] == 0 {
			break // the zeros after the last write
		}
		if fh[1] != 0 || fh[2] != 0 || fh[3] != 0 {
			stop(fmt.Sprintf("a frame header with non-zero reserved bytes (type %d)", typ))
			break
		}
		switch typ {
		case walFrameEntry, walFrameIndex:
			if val > walMaxEntrySize {
				stop(fmt.Sprintf("a frame of %d bytes", val))
				break
			}
			n := int(val) + (walFrameHeaderLen-int(val)%walFrameHeaderLen)&(walFrameHeaderLen-1)
			if cap(buf) < n {
				buf = make([]byte, n)
			}
			if _, err := io.ReadFull(r, buf[:n]); err != nil {
				if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
					stop("a frame cut by the end of the file")
					break
				}
				return sc, err
			}
			crc = crc32.Update(crc, castagnoli, fh[:])
			crc = crc32.Update(crc, castagnoli, buf[:n])
			if typ == walFrameEntry {
				pending++
				pendingOffs = append(pendingOffs, uint32(off))
			} else {
				indexAt = uint64(off) + walFrameHeaderLen
			}
			off += walFrameHeaderLen + int64(n)
			if typ == walFrameIndex {
				sc.tornIndex = off
			}
			continue
		case walFrameCommit:
			if val != crc {
				stop("a batch whose CRC does not match its commit frame")
				break
			}
			sc.entries += pending
			sc.offsets = append(sc.offsets, pendingOffs...)
			pending, pendingOffs = 0, pendingOffs[:0]
			if indexAt > 0 {
				sc.sealed, sc.indexStart, sc.tornIndex = true, indexAt, 0
			}
			crc = 0
			off += walFrameHeaderLen
			sc.end = off
			if sc.sealed {
				return sc, nil // nothing is written after the seal
			}
			continue
		default:
			stop(fmt.Sprintf("a frame of unknown type %d", typ))
		}
		break
	}
	sc.uncommitted = pending
	if sc.damage >= 0 {
		sc.beyond, err = entriesBeyond(f, sc.damage, info.BaseIndex+sc.entries)
		if err != nil {
			return sc, err
		}
	}
	return sc, nil
}

// entriesBeyond looks for whole batches written after the damage at
// off: a batch starts after a commit frame, so at each offset after a
// commit frame header it reads entry frames up to the next commit frame
// and keeps the batch if its CRC matches. It returns the highest entry
// index in such a batch above after, or 0. Bytes left past the end by a
// batch that was written again shorter after a failed write are not a
// whole batch (it started before the damage), so only damage followed by
// batches the segment really held counts.
func entriesBeyond(f io.ReaderAt, off int64, after uint64) (uint64, error) {
	rest, err := readAll(f, off)
	if err != nil {
		return 0, err
	}
	isCommit := func(h []byte) bool {
		return h[0] == walFrameCommit && h[1] == 0 && h[2] == 0 && h[3] == 0
	}
	var best uint64
	for start := walFrameHeaderLen; start+walFrameHeaderLen <= len(rest); start += walFrameHeaderLen {
		if !isCommit(rest[start-walFrameHeaderLen : start]) {
			continue
		}
		if idx := verifiedBatch(rest[start:]); idx > after && idx > best {
			best = idx
		}
	}
	return best, nil
}

// verifiedBatch reads one batch from the start of b: entry (and index)
// frames, then a commit frame whose CRC covers them. It returns the
// highest entry index in it, or 0 if b does not start with a whole batch.
func verifiedBatch(b []byte) uint64 {
	var codec wal.BinaryCodec
	var crc uint32
	var last uint64
	for pos := 0; pos+walFrameHeaderLen <= len(b); {
		h := b[pos : pos+walFrameHeaderLen]
		if h[1] != 0 || h[2] != 0 || h[3] != 0 {
			return 0
		}
		v := binary.LittleEndian.Uint32(h[4:8])
		switch h[0] {
		case walFrameCommit:
			if v != crc || last == 0 {
				return 0
			}
			return last
		case walFrameEntry, walFrameIndex:
			n := int(v)
			padded := n + (walFrameHeaderLen-n%walFrameHeaderLen)&(walFrameHeaderLen-1)
			if v > walMaxEntrySize || pos+walFrameHeaderLen+padded > len(b) {
				return 0
			}
			if h[0] == walFrameEntry {
				var l raft.Log
				if codec.Decode(b[pos+walFrameHeaderLen:pos+walFrameHeaderLen+n], &l) != nil {
					return 0
				}
				last = l.Index
			}
			crc = crc32.Update(crc, castagnoli, b[pos:pos+walFrameHeaderLen+padded])
			pos += walFrameHeaderLen + padded
		default:
			return 0
		}
	}
	return 0
}

// tailCut is what checkWAL found in the tail segment, to report once the
// WAL has opened and says where it cut.
type tailCut struct {
	file    string
	held    uint64 // the highest index the segment held (0: unknown)
	why     string // what was found
	corrupt bool   // damage, not an unfinished last batch
}

// checkWAL checks the segments listed in the WAL's meta store (opened by
// the caller) before the WAL opens them (see above). It returns
// ErrCorruptLog for damage before the tail and what to report about the
// tail, or nil.
func checkWAL(dir string, disk Disk, db *metadb.BoltMetaDB, logger hclog.Logger) (*tailCut, error) {
	st, err := db.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("cluster: wal meta store: %w", err)
	}
	for i, si := range st.Segments {
		file := segment.FileName(si)
		path := filepath.Join(dir, file)
		last := i == len(st.Segments)-1
		sealed := !si.SealTime.IsZero()
		sc, err := scanSegment(disk, path, si)
		if errors.Is(err, fs.ErrNotExist) && last && !sealed {
			return nil, nil // raft-wal creates it (a crash right after the rotation was recorded)
		}
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%w: segment %s (entries %d to %d) is missing; %s",
					ErrCorruptLog, file, si.BaseIndex, si.MaxIndex, corruptAdvice)
			}
			return nil, fmt.Errorf("cluster: reading wal segment %s: %w", file, err)
		}
		if sealed {
			want := si.MaxIndex - si.BaseIndex + 1
			if !sc.sealed && sc.entries >= want && want > 0 {
				if err := rebuildIndex(disk, path, db, st, i, sc); err != nil {
					return nil, err
				}
				logger.Warn("a sealed wal segment had no index frame (a write torn while the segment was sealed); rebuilt it from the segment's entries, all of which verify",
					"segment", file, "first_index", si.BaseIndex, "last_index", si.MaxIndex)
				continue
			}
			if sc.damage >= 0 || !sc.sealed || sc.entries < want {
				what := sc.why
				if sc.damage < 0 {
					what = "no index frame"
				}
				return nil, fmt.Errorf("%w: segment %s, before the log's tail, is damaged at byte %d (%s): "+
					"entries %d to %d are unreadable; %s",
					ErrCorruptLog, file, sc.damage, what, si.BaseIndex+sc.entries, si.MaxIndex, corruptAdvice)
			}
			if sc.indexStart != si.IndexStart {
				// A rebuilt index whose record did not commit.
				seg := si
				seg.IndexStart = sc.indexStart
				st.Segments[i] = seg
				if err := db.CommitState(st); err != nil {
					return nil, fmt.Errorf("cluster: recording the index of wal segment %s: %w", file, err)
				}
			}
			continue
		}
		// The tail.
		if sc.tornIndex > 0 {
			if err := zeroTornSeal(disk, path, sc); err != nil {
				return nil, err
			}
			logger.Warn("the wal's last segment holds a seal that was not completely written (a torn write); removed it, the segment stays open",
				"segment", file, "last_index", si.BaseIndex+sc.entries-1)
		}
		if sc.sealed {
			if err := recordRotation(db, st, i, sc); err != nil {
				return nil, err
			}
			logger.Warn("the wal's last segment was sealed but its rotation not recorded (a failed write, e.g. a full disk); recorded it now",
				"segment", file, "last_index", si.BaseIndex+sc.entries-1)
		}
		held := si.BaseIndex + sc.entries - 1
		switch {
		case sc.damage >= 0:
			if sc.beyond > held {
				held = sc.beyond
			} else if sc.uncommitted > 0 {
				held += sc.uncommitted
			}
			// Entries found past the damage: batches after it were
			// written (and fsynced) and are lost. None: the last batch
			// itself was torn.
			return &tailCut{file: file, held: held, why: fmt.Sprintf("%s at byte %d", sc.why, sc.damage), corrupt: sc.beyond > 0}, nil
		case sc.uncommitted > 0:
			return &tailCut{file: file, held: held + sc.uncommitted,
				why: fmt.Sprintf("%d entries written without their commit frame (a write torn by a crash)", sc.uncommitted)}, nil
		}
	}
	return nil, nil
}

// rebuildIndex writes the index frame of sealed segment i, which the
// meta state st lists as sealed but whose file does not hold it (see
// above), after the segment's last verified batch, as raft-wal's seal
// writes it: an index frame holding the offsets of every entry frame,
// then a commit frame with the CRC of the index frame. It fsyncs the file
// and records where the index starts.
func rebuildIndex(disk Disk, path string, db *metadb.BoltMetaDB, st types.PersistentState, i int, sc segmentScan) error {
	n := len(sc.offsets)
	body := n * 4
	padded := body + (walFrameHeaderLen-body%walFrameHeaderLen)&(walFrameHeaderLen-1)
	buf := make([]byte, walFrameHeaderLen+padded+walFrameHeaderLen)
	buf[0] = walFrameIndex
	binary.LittleEndian.PutUint32(buf[4:8], uint32(body))
	for j, o := range sc.offsets {
		binary.LittleEndian.PutUint32(buf[walFrameHeaderLen+4*j:], o)
	}
	commit := buf[walFrameHeaderLen+padded:]
	commit[0] = walFrameCommit
	binary.LittleEndian.PutUint32(commit[4:8], crc32.Checksum(buf[:walFrameHeaderLen+padded], castagnoli))

	f, err := disk.Open(path, true)
	if err != nil {
		return fmt.Errorf("cluster: rebuilding the index of wal segment %s: %w", filepath.Base(path), err)
	}
	_, werr := f.WriteAt(buf, sc.end)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("cluster: rebuilding the index of wal segment %s: %w", filepath.Base(path), werr)
	}
	seg := st.Segments[i]
	seg.IndexStart = uint64(sc.end) + walFrameHeaderLen
	st.Segments[i] = seg
	if err := db.CommitState(st); err != nil {
		return fmt.Errorf("cluster: recording the rebuilt index of wal segment %s: %w", filepath.Base(path), err)
	}
	return nil
}

// zeroTornSeal clears the tail segment's bytes from its last verified
// commit frame to the end of the uncommitted index frame after it: a
// batch that was never committed, so never acknowledged.
func zeroTornSeal(disk Disk, path string, sc segmentScan) error {
	f, err := disk.Open(path, true)
	if err != nil {
		return fmt.Errorf("cluster: clearing a torn seal in wal segment %s: %w", filepath.Base(path), err)
	}
	_, werr := f.WriteAt(make([]byte, sc.tornIndex-sc.end), sc.end)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("cluster: clearing a torn seal in wal segment %s: %w", filepath.Base(path), werr)
	}
	return nil
}

// recordRotation seals the tail segment i in the meta state and lists a
// new, empty tail after it: what raft-wal's rotateSegmentLocked commits.
func recordRotation(db *metadb.BoltMetaDB, st types.PersistentState, i int, sc segmentScan) error {
	tail := st.Segments[i]
	tail.SealTime = time.Now()
	tail.MaxIndex = tail.BaseIndex + sc.entries - 1
	tail.IndexStart = sc.indexStart
	st.Segments[i] = tail
	st.Segments = append(st.Segments, types.SegmentInfo{
		ID:         st.NextSegmentID,
		BaseIndex:  tail.MaxIndex + 1,
		MinIndex:   tail.MaxIndex + 1,
		SizeLimit:  uint32(walSegmentSize),
		Codec:      wal.CodecBinaryV1,
		CreateTime: time.Now(),
	})
	st.NextSegmentID++
	if err := db.CommitState(st); err != nil {
		return fmt.Errorf("cluster: recording the wal's last rotation: %w", err)
	}
	return nil
}

// report logs what the tail check found, now that the WAL says where it
// cut (last: its last index).
func (c *tailCut) report(last uint64, logger hclog.Logger) {
	if c == nil || c.held <= last {
		return
	}
	if c.corrupt {
		logger.Error("corrupt raft log tail: entries after the damage were cut; this node gets them again from the leader, "+
			"but they were on disk and may have been acknowledged: check the disk",
			"segment", c.file, "found", c.why, "cut_from", last+1, "cut_to", c.held, "last_index", last)
		return
	}
	logger.Error("torn raft log tail: the last batch was not completely written and was cut (it was never acknowledged, "+
		"unless the disk lost data it had fsynced)",
		"segment", c.file, "found", c.why, "cut_from", last+1, "cut_to", c.held, "last_index", last)
}
