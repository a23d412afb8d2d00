//! A small deterministic generator for the tests that check one implementation against
//! another on generated inputs (xorshift: the same inputs on every run, no dependency).

/// An xorshift64 generator; the seed must not be 0.
pub(crate) struct XorShift(pub(crate) u64);

impl XorShift {
    /// The next 64 bits.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (not 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).expect("below n")
    }

    /// One of `items` (not empty).
    pub(crate) fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}
