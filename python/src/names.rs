//! Python strs for serde's field and variant names, made once per name.
//!
//! serde names every field and unit variant with a `&'static str`. `PyString::intern` makes a
//! new str of it and looks that up in the interpreter's table of interned strings (hashing the
//! new str) at every call: several hundred instructions a key, some 25 keys a message, two
//! messages per request (the `start` and `done` events). Here each name's interned str is kept
//! under the name's address and length: a look-up hashes two integers.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{LazyLock, Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::PyString;

/// A `&'static str` by address and length (two names may share an address: one a prefix of
/// the other).
type NameKey = (usize, usize);

/// Interned strs by name.
type Names = HashMap<NameKey, Py<PyString>, BuildHasherDefault<AddressHasher>>;

/// Every name asked so far: as many as the serialized types have, a few hundred at most.
static NAMES: LazyLock<Mutex<Names>> = LazyLock::new(Mutex::default);

/// The interned Python str of `name`.
pub(crate) fn interned<'py>(py: Python<'py>, name: &'static str) -> Bound<'py, PyString> {
    let key = (name.as_ptr() as usize, name.len());
    let names = || NAMES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(known) = names().get(&key) {
        return known.bind(py).clone();
    }
    let made = PyString::intern(py, name);
    names()
        .entry(key)
        .or_insert_with(|| made.clone().unbind())
        .bind(py)
        .clone()
}

/// A multiplicative hash of the key's two integers: the keys are addresses, not input anyone
/// chooses, so no protection against collisions is needed.
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}
