//! The transport's policy, Node-free: what a UCX status means to the user (which coded
//! error, given what the operation was), the bytes of a remote key this library hands
//! out (UCX's packed key inside an envelope naming the registered range, so that a peer
//! refuses an access outside it, or bytes that are no key, before UCX sees them), and the
//! book of operations in flight, which holds each operation's operands until UCX is done
//! with them: a `free()` meanwhile only drops the object's reference, the memory goes
//! when the operation completes.

use std::collections::HashMap;

use crate::error::MemoryError;

/// UCX statuses this policy tells apart (`ucs/type/status.h`).
pub mod status {
    pub const UNREACHABLE: i32 = -6;
    pub const INVALID_ADDR: i32 = -7;
    pub const MESSAGE_TRUNCATED: i32 = -9;
    pub const BUSY: i32 = -15;
    pub const CANCELED: i32 = -16;
    pub const REJECTED: i32 = -23;
    pub const NOT_CONNECTED: i32 = -24;
    pub const CONNECTION_RESET: i32 = -25;
    /// `UCS_ERR_FIRST_LINK_FAILURE ..= UCS_ERR_LAST_ENDPOINT_FAILURE`: link and endpoint
    /// failures (timeouts of keepalive among them).
    pub const FIRST_LINK_FAILURE: i32 = -40;
    pub const LAST_ENDPOINT_FAILURE: i32 = -89;
    pub const TIMED_OUT: i32 = -20;
    pub const IO_ERROR: i32 = -3;
    pub const NO_DEVICE: i32 = -14;
}

/// What an operation was, for its error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Connect,
    Send,
    Recv,
    Put,
    Get,
    Flush,
    Close,
}

impl OpKind {
    fn name(self) -> &'static str {
        match self {
            OpKind::Connect => "connect",
            OpKind::Send => "send",
            OpKind::Recv => "recv",
            OpKind::Put => "put",
            OpKind::Get => "get",
            OpKind::Flush => "flush",
            OpKind::Close => "close",
        }
    }
}

/// Whether `status` is a failure of the peer or the link under it.
pub fn is_peer_failure(status: i32) -> bool {
    matches!(status, status::CONNECTION_RESET | status::NOT_CONNECTED | status::TIMED_OUT | status::IO_ERROR)
        || (status::LAST_ENDPOINT_FAILURE..=status::FIRST_LINK_FAILURE).contains(&status)
}

/// The error of an operation that completed with `status` (never `OK`). `text` is UCX's
/// own text for it, `nbytes` the operation's buffer size, `peer` the address of the
/// other side, `endpoint_failed` whether UCX reported the endpoint failed, `closed`
/// whether this side closed it.
pub fn op_error(
    kind: OpKind,
    status: i32,
    text: &str,
    nbytes: u64,
    peer: &str,
    endpoint_failed: bool,
    closed: bool,
) -> MemoryError {
    match status {
        status::MESSAGE_TRUNCATED => MemoryError::UcxTruncated { nbytes },
        // This side closed it and UCX reported no failure of it: the close ended the op.
        _ if closed && !endpoint_failed && kind != OpKind::Connect => {
            MemoryError::UcxEndpointClosed { what: "endpoint".into() }
        }
        status::UNREACHABLE | status::REJECTED | status::CONNECTION_RESET | status::NOT_CONNECTED
            if kind == OpKind::Connect =>
        {
            MemoryError::UcxConnectionRefused { address: peer.into(), message: text.into() }
        }
        _ if kind == OpKind::Connect && (is_peer_failure(status) || endpoint_failed) => {
            MemoryError::UcxConnectionRefused { address: peer.into(), message: text.into() }
        }
        _ if endpoint_failed
            || is_peer_failure(status)
            || status == status::CANCELED
            || status == status::UNREACHABLE =>
        {
            MemoryError::UcxPeerFailed { operation: format!("{} with {peer}", kind.name()), message: text.into() }
        }
        _ => MemoryError::Ucx { operation: kind.name().into(), message: text.into() },
    }
}

/// The error of a UCX call that failed at once (`operation`: the call). A listener that
/// cannot bind (an address of no interface here) fails with an I/O error.
pub fn call_error(operation: &str, status: i32, text: &str, address: &str) -> MemoryError {
    match status {
        status::INVALID_ADDR | status::UNREACHABLE | status::NO_DEVICE | status::IO_ERROR => {
            MemoryError::UcxBadAddress { message: format!("{operation}: cannot use {address}: {text}") }
        }
        status::BUSY => MemoryError::UcxBadAddress { message: format!("{operation}: {address} is in use: {text}") },
        _ => MemoryError::Ucx { operation: operation.into(), message: text.into() },
    }
}

/// Parses `host` and `port` into a socket address: an IP literal (v4 or v6, brackets
/// allowed) or `localhost`. Names are not resolved here (a blocking lookup): resolve
/// them first (`dns.lookup`).
pub fn parse_address(host: &str, port: u32) -> Result<std::net::SocketAddr, MemoryError> {
    let bad = |why: &str| MemoryError::UcxBadAddress { message: format!("'{}' port {port}: {why}", truncate(host)) };
    let port = u16::try_from(port).map_err(|_| bad("the port must be 0..65535"))?;
    let literal = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    let ip: std::net::IpAddr = if literal == "localhost" {
        std::net::Ipv4Addr::LOCALHOST.into()
    } else {
        literal.parse().map_err(|_| bad("not an IP address (resolve host names first, e.g. with dns.lookup)"))?
    };
    Ok(std::net::SocketAddr::new(ip, port))
}

fn truncate(text: &str) -> String {
    text.chars().take(80).collect()
}

/// The first bytes of every remote key this library packs.
const KEY_MAGIC: &[u8; 8] = b"DPMRKEY1";
/// Magic, base address, length.
const KEY_HEADER: usize = 8 + 8 + 8;

/// A remote key's envelope: the registered range and UCX's packed key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteKey {
    pub base: u64,
    pub nbytes: u64,
    pub packed: Vec<u8>,
}

impl RemoteKey {
    /// The bytes to send to a peer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(KEY_HEADER + self.packed.len());
        out.extend_from_slice(KEY_MAGIC);
        out.extend_from_slice(&self.base.to_le_bytes());
        out.extend_from_slice(&self.nbytes.to_le_bytes());
        out.extend_from_slice(&self.packed);
        out
    }

    /// Reads bytes a peer sent; anything that is not a key of this library is refused.
    pub fn from_bytes(bytes: &[u8]) -> Result<RemoteKey, MemoryError> {
        let invalid =
            |why: &str| MemoryError::UcxRkeyInvalid { message: format!("not a remote key of dpctl-memory: {why}") };
        if bytes.len() <= KEY_HEADER {
            return Err(invalid(&format!("{} bytes is too short", bytes.len())));
        }
        let (header, packed) = bytes.split_at(KEY_HEADER);
        if &header[..8] != KEY_MAGIC {
            return Err(invalid("it does not start with the key's mark"));
        }
        let word = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&header[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let (base, nbytes) = (word(8), word(16));
        if nbytes == 0 || base.checked_add(nbytes).is_none() {
            return Err(invalid("its range is empty or wraps"));
        }
        Ok(RemoteKey { base, nbytes, packed: packed.to_vec() })
    }

    /// The remote address of an access of `len` bytes at `offset` into the range; an
    /// access outside it is refused.
    pub fn address_of(&self, offset: u64, len: u64) -> Result<u64, MemoryError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.nbytes => Ok(self.base + offset),
            _ => Err(MemoryError::UcxRkeyInvalid {
                message: format!(
                    "an access of {len} bytes at offset {offset} leaves the {} bytes this remote key covers",
                    self.nbytes
                ),
            }),
        }
    }
}

/// One operation in flight: what it is, its endpoint, the bytes it has, and what it holds.
#[derive(Debug)]
pub struct InFlight<H> {
    pub kind: OpKind,
    pub endpoint: u64,
    pub nbytes: u64,
    pub held: H,
}

/// The operations in flight of one worker, by op id, holding their operands (`H`) until
/// they complete.
#[derive(Debug)]
pub struct InFlightBook<H> {
    ops: HashMap<u64, InFlight<H>>,
}

impl<H> Default for InFlightBook<H> {
    fn default() -> Self {
        InFlightBook { ops: HashMap::new() }
    }
}

impl<H> InFlightBook<H> {
    /// Records an operation UCX accepted.
    pub fn start(&mut self, id: u64, op: InFlight<H>) {
        self.ops.insert(id, op);
    }

    /// The operation `id` completed: its record, with what it held (released by the
    /// caller once it has used it). `None` for an id not in flight.
    pub fn finish(&mut self, id: u64) -> Option<InFlight<H>> {
        self.ops.remove(&id)
    }

    /// The ids of the endpoint's operations in flight of `kind` (receives to cancel when
    /// it fails or closes).
    pub fn of_endpoint(&self, endpoint: u64, kind: OpKind) -> Vec<u64> {
        let mut ids: Vec<u64> =
            self.ops.iter().filter(|(_, op)| op.endpoint == endpoint && op.kind == kind).map(|(id, _)| *id).collect();
        ids.sort_unstable();
        ids
    }

    /// Operations in flight.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether none is in flight.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use std::rc::Rc;

    #[test]
    fn statuses_map_to_the_codes_users_see() {
        let err =
            |kind, status, failed, closed| op_error(kind, status, "text", 8, "10.0.0.1:1", failed, closed).error_code();
        assert_eq!(err(OpKind::Recv, status::MESSAGE_TRUNCATED, false, false), ErrorCode::UcxTruncated);
        assert_eq!(err(OpKind::Connect, status::UNREACHABLE, true, false), ErrorCode::UcxConnectionRefused);
        assert_eq!(err(OpKind::Connect, status::CONNECTION_RESET, false, false), ErrorCode::UcxConnectionRefused);
        assert_eq!(err(OpKind::Send, status::CONNECTION_RESET, true, false), ErrorCode::UcxPeerFailed);
        assert_eq!(err(OpKind::Recv, status::CANCELED, true, true), ErrorCode::UcxPeerFailed);
        assert_eq!(err(OpKind::Recv, status::CANCELED, false, true), ErrorCode::UcxEndpointClosed);
        assert_eq!(err(OpKind::Send, status::CONNECTION_RESET, false, true), ErrorCode::UcxEndpointClosed, "our close");
        assert_eq!(err(OpKind::Send, status::CONNECTION_RESET, true, true), ErrorCode::UcxPeerFailed);
        assert_eq!(err(OpKind::Recv, status::MESSAGE_TRUNCATED, false, true), ErrorCode::UcxTruncated);
        assert_eq!(err(OpKind::Send, -80, false, false), ErrorCode::UcxPeerFailed, "endpoint timeout");
        assert_eq!(err(OpKind::Send, -2, false, false), ErrorCode::Ucx);
        let truncated = op_error(OpKind::Recv, status::MESSAGE_TRUNCATED, "", 8, "", false, false);
        assert_eq!(
            truncated.to_string(),
            "the message is larger than the receive buffer of 8 bytes (it was truncated and dropped)"
        );
        assert_eq!(call_error("listen", status::BUSY, "busy", "0.0.0.0:1").error_code(), ErrorCode::UcxBadAddress);
        assert_eq!(call_error("listen", status::IO_ERROR, "io", "192.0.2.1:0").error_code(), ErrorCode::UcxBadAddress);
        assert_eq!(call_error("listen", -2, "no resource", "0.0.0.0:1").error_code(), ErrorCode::Ucx);
    }

    #[test]
    fn addresses_are_ip_literals_and_ports() {
        assert_eq!(parse_address("127.0.0.1", 80).unwrap().to_string(), "127.0.0.1:80");
        assert_eq!(parse_address("[::1]", 0).unwrap().to_string(), "[::1]:0");
        assert_eq!(parse_address("localhost", 1).unwrap().to_string(), "127.0.0.1:1");
        for (host, port) in [("example.invalid", 1), ("127.0.0.1", 65536), ("", 1), ("1.2.3.4.5", 1)] {
            assert_eq!(parse_address(host, port).unwrap_err().error_code(), ErrorCode::UcxBadAddress, "{host}");
        }
    }

    #[test]
    fn remote_keys_round_trip_and_refuse_what_is_not_theirs() {
        let key = RemoteKey { base: 0x1000, nbytes: 64, packed: vec![1, 2, 3] };
        let bytes = key.to_bytes();
        assert_eq!(RemoteKey::from_bytes(&bytes).unwrap(), key);
        for bad in [&bytes[..KEY_HEADER], &[0u8; 40][..], b"short"] {
            assert_eq!(RemoteKey::from_bytes(bad).unwrap_err().error_code(), ErrorCode::UcxRkeyInvalid);
        }
        let mut wraps = bytes.clone();
        wraps[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(RemoteKey::from_bytes(&wraps).unwrap_err().error_code(), ErrorCode::UcxRkeyInvalid);
        assert_eq!(key.address_of(0, 64).unwrap(), 0x1000);
        assert_eq!(key.address_of(60, 4).unwrap(), 0x103c);
        for (offset, len) in [(60, 5), (64, 1), (u64::MAX, 2)] {
            assert_eq!(key.address_of(offset, len).unwrap_err().error_code(), ErrorCode::UcxRkeyInvalid);
        }
    }

    #[test]
    fn the_book_holds_operands_until_completion() {
        let operand = Rc::new(());
        let mut book = InFlightBook::default();
        book.start(7, InFlight { kind: OpKind::Recv, endpoint: 1, nbytes: 4, held: Rc::clone(&operand) });
        book.start(8, InFlight { kind: OpKind::Send, endpoint: 1, nbytes: 4, held: Rc::clone(&operand) });
        book.start(9, InFlight { kind: OpKind::Recv, endpoint: 2, nbytes: 4, held: Rc::clone(&operand) });
        assert_eq!(Rc::strong_count(&operand), 4);
        assert_eq!(book.of_endpoint(1, OpKind::Recv), vec![7]);
        let done = book.finish(7).unwrap();
        assert_eq!(Rc::strong_count(&operand), 4, "held until the caller lets go");
        drop(done);
        assert_eq!(Rc::strong_count(&operand), 3);
        assert!(book.finish(7).is_none(), "one completion per op");
        assert_eq!(book.len(), 2);
    }
}
