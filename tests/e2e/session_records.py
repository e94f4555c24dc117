"""The records of a saved session (xflow/session.h), read apart from the C
reader, for end-to-end tests to count what arrived.

records(path) yields (t_ns, record) for each record, in file order, from
whole (type 1), packed (5) and RECORDS (6) chunks; a record is a dict of
its fields (timestamp, flow_id, site_id, flow_kind, domain_id, flags,
version, ndata, thread_id, thread_seq, cpu_plus1, data).  It checks no
more than it needs to find the records: the C reader is the one that
refuses damage.
"""
import struct

FIELDS = ('timestamp', 'flow_id', 'site_id', 'flow_kind', 'domain_id', 'flags',
          'version', 'ndata', 'thread_id', 'thread_seq', 'cpu_plus1')


def _whole(payload):
    vals = struct.unpack_from('<QQIHHHBBIII', payload, 8)
    r = dict(zip(FIELDS, vals))
    n = len(payload) - 48
    r['data'] = list(struct.unpack_from('<%dQ' % (n // 8), payload, 48))
    r['data'] += [0] * (6 - len(r['data']))
    return struct.unpack_from('<Q', payload)[0], r


def _varint(b, at):
    v, shift = 0, 0
    while True:
        x = b[at]
        at += 1
        v |= (x & 0x7f) << shift
        shift += 7
        if not x & 0x80:
            return v, at


def _unzig(z, bits=64):
    m = (1 << bits) - 1
    return ((z >> 1) ^ -(z & 1)) & m


def _batch(payload):
    """A RECORDS chunk: each record its differences from the one before."""
    prev = dict.fromkeys(FIELDS, 0)
    prev['data'] = [0] * 6
    t, at, m64 = 0, 0, (1 << 64) - 1
    while at < len(payload):
        head = payload[at]
        at += 1
        r = dict(prev)
        r['ndata'] = head & 7
        if not head & 0x08:
            for f in ('flow_kind', 'domain_id', 'version', 'thread_id', 'cpu_plus1'):
                r[f], at = _varint(payload, at)
        if not head & 0x10:
            r['flags'], at = _varint(payload, at)
        if not head & 0x20:
            r['site_id'], at = _varint(payload, at)
        if not head & 0x40:
            z, at = _varint(payload, at)
            r['flow_id'] = (prev['flow_id'] + _unzig(z)) & m64
        z, at = _varint(payload, at)
        t = (t + _unzig(z)) & m64
        z, at = _varint(payload, at)
        r['timestamp'] = (prev['timestamp'] + _unzig(z)) & m64
        z, at = _varint(payload, at)
        r['thread_seq'] = (prev['thread_seq'] + _unzig(z, 32)) & 0xffffffff
        data = []
        for i in range(6):
            if i < r['ndata']:
                z, at = _varint(payload, at)
                data.append((prev['data'][i] + _unzig(z)) & m64)
            else:
                data.append(0)
        r['data'] = data
        prev = r
        yield t, r


def records(path):
    data = open(path, 'rb').read()
    assert data[:8] == b'XFLOWSES', 'not a session'
    at = 32
    while at + 8 <= len(data):
        typ, ln = struct.unpack_from('<II', data, at)
        payload = data[at + 8:at + 8 + ln]
        if typ in (1, 5):  # a record, whole or packed (version 8)
            yield _whole(payload)
        elif typ == 6:  # RECORDS (version 9)
            yield from _batch(payload)
        at += 8 + ln
