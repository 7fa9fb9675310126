package grantstore

// Order-preserving tuple encoding: elements separated by 0x00, with 0x00 escaped as
// 0x01 0x01 and 0x01 as 0x01 0x02. The separator sorts below every escaped byte, so a
// shorter tuple sorts before its extensions and byte order equals element-wise value order.

import (
	"bytes"
	"errors"
)

const (
	sep     = 0x00
	esc     = 0x01
	escZero = 0x01
	escOne  = 0x02
)

// Key tags: one byte in front of every key says which table it belongs to.
const (
	tagGrant         byte = 0x10 // (sync, external_id) -> GrantRecord
	tagByEntitlement byte = 0x11 // (sync, entitlement, principal type, principal, external_id)
	tagByPrincipal   byte = 0x12 // (sync, principal type, principal, external_id)
	tagSyncMeta      byte = 0x13 // (sync) -> sync state
)

// AppendTuple appends the encoding of elems to dst.
func AppendTuple(dst []byte, elems ...string) []byte {
	for i, e := range elems {
		if i > 0 {
			dst = append(dst, sep)
		}
		for j := 0; j < len(e); j++ {
			switch c := e[j]; c {
			case 0x00:
				dst = append(dst, esc, escZero)
			case 0x01:
				dst = append(dst, esc, escOne)
			default:
				dst = append(dst, c)
			}
		}
	}
	return dst
}

// DecodeTuple splits an encoded tuple back into its elements.
func DecodeTuple(b []byte) ([]string, error) {
	var out []string
	var cur []byte
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case sep:
			out = append(out, string(cur))
			cur = cur[:0]
		case esc:
			if i+1 >= len(b) {
				return nil, errors.New("tuple: dangling escape byte")
			}
			i++
			switch b[i] {
			case escZero:
				cur = append(cur, 0x00)
			case escOne:
				cur = append(cur, 0x01)
			default:
				return nil, errors.New("tuple: invalid escape sequence")
			}
		default:
			cur = append(cur, b[i])
		}
	}
	return append(out, string(cur)), nil
}

func tagged(tag byte, elems ...string) []byte {
	return AppendTuple([]byte{tag}, elems...)
}

// GrantKey is the primary key of a grant.
func GrantKey(syncID, externalID string) []byte {
	return tagged(tagGrant, syncID, externalID)
}

// ByEntitlementKey indexes a grant by the entitlement it grants.
func ByEntitlementKey(syncID, entitlementID, principalType, principalID, externalID string) []byte {
	return tagged(tagByEntitlement, syncID, entitlementID, principalType, principalID, externalID)
}

// ByPrincipalKey indexes a grant by the principal it is granted to.
func ByPrincipalKey(syncID, principalType, principalID, externalID string) []byte {
	return tagged(tagByPrincipal, syncID, principalType, principalID, externalID)
}

// SyncMetaKey holds a sync's state.
func SyncMetaKey(syncID string) []byte {
	return tagged(tagSyncMeta, syncID)
}

// grantPrefix bounds every primary key of a sync: [prefix, prefixEnd).
func grantPrefix(syncID string) (lower, upper []byte) {
	lower = append(tagged(tagGrant, syncID), sep)
	upper = append(bytes.Clone(lower[:len(lower)-1]), sep+1)
	return lower, upper
}
