//! The layouts of the headers the datapath parses and rewrites, one module per protocol, in
//! the manner of smoltcp's `wire`: a protocol's `field` module names each field by its
//! position relative to the header's start (a byte index, or a range for a wider field),
//! its constants name the values and bit masks the datapath tests, and a view wraps a header
//! whose bytes were bounds-checked once, as a fixed-size array.
//!
//! Why views over arrays: every accessor then reads or writes at a constant offset inside an
//! array of known length, which the compiler checks at compile time, so naming a field costs
//! no instruction over indexing the bytes by hand (the parser's and the actions' instruction
//! counts are the same either way). What is not in a fixed header (the IPv6 extension chain,
//! ND options, IPv4 options) is read through [`bytes_at`], one checked read each.

pub(crate) mod arp;
pub(crate) mod ethernet;
pub(crate) mod icmp;
pub(crate) mod ip;
pub(crate) mod ipv4;
pub(crate) mod ipv6;
pub(crate) mod mpls;
pub(crate) mod pbb;
pub(crate) mod sctp;
pub(crate) mod tcp;
pub(crate) mod udp;

/// A multi-byte field: its bytes' positions in the header.
pub(crate) type Field = core::ops::Range<usize>;

/// `N` bytes at `at` of `bytes`, if all are there: the one bounds check a view needs.
#[inline(always)]
pub(crate) fn bytes_at<const N: usize>(bytes: &[u8], at: usize) -> Option<&[u8; N]> {
    bytes.get(at..)?.first_chunk::<N>()
}

/// [`bytes_at`] to write.
#[inline(always)]
pub(crate) fn bytes_at_mut<const N: usize>(bytes: &mut [u8], at: usize) -> Option<&mut [u8; N]> {
    bytes.get_mut(at..)?.first_chunk_mut::<N>()
}

/// The `M` bytes of `field` in the header `h` (`M` is the field's width; for the constant
/// fields of the `field` modules the copy compiles to one load).
#[inline(always)]
pub(crate) fn get<const N: usize, const M: usize>(h: &[u8; N], field: Field) -> [u8; M] {
    let mut out = [0u8; M];
    if let Some(src) = h.get(field.start..field.start + M) {
        out.copy_from_slice(src);
    }
    out
}

/// Writes the `M` bytes of `field` in the header `h`.
#[inline(always)]
pub(crate) fn set<const N: usize, const M: usize>(h: &mut [u8; N], field: Field, value: [u8; M]) {
    if let Some(dst) = h.get_mut(field.start..field.start + M) {
        dst.copy_from_slice(&value);
    }
}

/// The big-endian 16-bit `field` of `h`.
#[inline(always)]
pub(crate) fn get16<const N: usize>(h: &[u8; N], field: Field) -> u16 {
    u16::from_be_bytes(get(h, field))
}

/// The big-endian 32-bit `field` of `h`.
#[inline(always)]
pub(crate) fn get32<const N: usize>(h: &[u8; N], field: Field) -> u32 {
    u32::from_be_bytes(get(h, field))
}

/// Writes the big-endian 16-bit `field` of `h`.
#[inline(always)]
pub(crate) fn set16<const N: usize>(h: &mut [u8; N], field: Field, value: u16) {
    set(h, field, value.to_be_bytes());
}

/// Writes the big-endian 32-bit `field` of `h`.
#[inline(always)]
pub(crate) fn set32<const N: usize>(h: &mut [u8; N], field: Field, value: u32) {
    set(h, field, value.to_be_bytes());
}

/// Defines a view of a fixed-size header: a struct over its bytes `B` (`&[u8; LEN]` to read,
/// `&mut [u8; LEN]` to rewrite), made by one bounds check; the protocol's module adds one
/// accessor per field.
macro_rules! header_view {
    ($(#[$doc:meta])* $name:ident, $len:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $name<B>(B);

        // Not every header is both read and rewritten: a view's constructors are its whole
        // interface, kept together.
        #[allow(dead_code)]
        impl<'a> $name<&'a [u8; $len]> {
            /// The header at `at` of `bytes`, if all of it is there.
            #[inline(always)]
            pub fn at(bytes: &'a [u8], at: usize) -> Option<Self> {
                $crate::wire::bytes_at(bytes, at).map($name)
            }

            /// The header in `bytes`, already known to be long enough.
            #[inline(always)]
            pub fn new(bytes: &'a [u8; $len]) -> Self {
                $name(bytes)
            }
        }

        #[allow(dead_code)]
        impl<'a> $name<&'a mut [u8; $len]> {
            /// The header at `at` of `bytes`, to rewrite, if all of it is there.
            #[inline(always)]
            pub fn at_mut(bytes: &'a mut [u8], at: usize) -> Option<Self> {
                $crate::wire::bytes_at_mut(bytes, at).map($name)
            }
        }

        impl<B: core::borrow::Borrow<[u8; $len]>> $name<B> {
            /// The header's bytes.
            #[inline(always)]
            #[allow(dead_code)]
            pub fn bytes(&self) -> &[u8; $len] {
                self.0.borrow()
            }
        }

        impl<B: core::borrow::BorrowMut<[u8; $len]>> $name<B> {
            #[inline(always)]
            #[allow(dead_code)]
            fn bytes_mut(&mut self) -> &mut [u8; $len] {
                self.0.borrow_mut()
            }
        }
    };
}
pub(crate) use header_view;
