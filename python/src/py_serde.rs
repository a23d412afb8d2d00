//! A serde `Serializer` that builds Python objects directly: core's messages and events become
//! dicts, lists and strs without a `serde_json::Value` in between, so a big message is copied
//! once (into its Python `str`) instead of twice.
//!
//! The objects are exactly what [`to_py`](crate::convert::to_py) makes of `serde_json::to_value`
//! (same keys in the same order, the same numbers, `None` for non-finite floats and for unit
//! values, map keys written as strings), so a user sees no difference. serde_json's `RawValue`
//! (raw JSON text, as a session record's event) becomes the Python value of that JSON.

use std::fmt::Display;

use pyo3::IntoPyObjectExt;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyList, PyString};
use serde::Serialize;
use serde::ser::{self, Impossible};

use crate::names::interned;

/// The Python object for `value`.
pub(crate) fn to_py_direct<'py, T: Serialize + ?Sized>(
    py: Python<'py>,
    value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    value
        .serialize(PySerializer { py })
        .map_err(|error| error.0)
}

/// A serde value on its way to Python, converted once attached (like
/// [`Json`](crate::convert::Json), without the `serde_json::Value`).
pub(crate) struct Serialized<T>(pub(crate) T);

impl<'py, T: Serialize> IntoPyObject<'py> for Serialized<T> {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py_direct(py, &self.0)
    }
}

/// A Python error as a serde error.
#[derive(Debug)]
pub(crate) struct Error(PyErr);

impl Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Display::fmt(&self.0, f)
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<M: Display>(message: M) -> Self {
        Self(PyValueError::new_err(format!(
            "cannot serialize: {message}"
        )))
    }
}

impl From<PyErr> for Error {
    fn from(error: PyErr) -> Self {
        Self(error)
    }
}

type Result<T> = std::result::Result<T, Error>;

/// The struct name under which serde_json's `RawValue` serializes: one field of that name,
/// holding the JSON text.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Python's `json.loads`, for `RawValue`s: the text is JSON that serde_json has already
/// checked (so nested at most 128 deep), and Python's C parser builds its objects directly.
static JSON_LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn parse_json<'py>(text: &Bound<'py, PyAny>) -> Result<Bound<'py, PyAny>> {
    let py = text.py();
    let loads = JSON_LOADS.get_or_try_init(py, || {
        py.import("json")?.getattr("loads").map(Bound::unbind)
    })?;
    Ok(loads.bind(py).call1((text,))?)
}

#[derive(Clone, Copy)]
struct PySerializer<'py> {
    py: Python<'py>,
}

impl<'py> PySerializer<'py> {
    fn object<I: IntoPyObject<'py>>(self, value: I) -> Result<Bound<'py, PyAny>> {
        value.into_bound_py_any(self.py).map_err(Error)
    }

    fn none(self) -> Bound<'py, PyAny> {
        self.py.None().into_bound(self.py)
    }

    /// `{variant: value}`, serde_json's shape of a variant with data.
    fn variant(self, variant: &str, value: Bound<'py, PyAny>) -> Result<Bound<'py, PyAny>> {
        let dict = PyDict::new(self.py);
        dict.set_item(PyString::new(self.py, variant), value)?;
        Ok(dict.into_any())
    }
}

/// Integers are Python `int`s.
macro_rules! integers {
    ($($method:ident: $integer:ty),*) => {$(
        fn $method(self, value: $integer) -> Result<Self::Ok> {
            self.object(value)
        }
    )*};
}

impl<'py> ser::Serializer for PySerializer<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = Error;
    type SerializeSeq = Seq<'py>;
    type SerializeTuple = Seq<'py>;
    type SerializeTupleStruct = Seq<'py>;
    type SerializeTupleVariant = Seq<'py>;
    type SerializeMap = Map<'py>;
    type SerializeStruct = Map<'py>;
    type SerializeStructVariant = Map<'py>;

    fn serialize_bool(self, value: bool) -> Result<Self::Ok> {
        Ok(PyBool::new(self.py, value).to_owned().into_any())
    }
    integers!(
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_i128: i128,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_u128: u128
    );
    fn serialize_f32(self, value: f32) -> Result<Self::Ok> {
        self.serialize_f64(f64::from(value))
    }
    fn serialize_f64(self, value: f64) -> Result<Self::Ok> {
        // serde_json has no NaN or infinity: they are `null`.
        if value.is_finite() {
            self.object(value)
        } else {
            Ok(self.none())
        }
    }
    fn serialize_char(self, value: char) -> Result<Self::Ok> {
        self.serialize_str(value.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, value: &str) -> Result<Self::Ok> {
        Ok(PyString::new(self.py, value).into_any())
    }
    fn serialize_bytes(self, value: &[u8]) -> Result<Self::Ok> {
        Ok(PyList::new(self.py, value)?.into_any())
    }
    fn serialize_none(self) -> Result<Self::Ok> {
        Ok(self.none())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Self::Ok> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Self::Ok> {
        Ok(self.none())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Self::Ok> {
        Ok(self.none())
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Self::Ok> {
        Ok(interned(self.py, variant).into_any())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Self::Ok> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Self::Ok> {
        let inner = value.serialize(self)?;
        self.variant(variant, inner)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Seq<'py>> {
        Ok(Seq {
            ser: self,
            list: PyList::empty(self.py),
            variant: None,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq<'py>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Seq<'py>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Seq<'py>> {
        Ok(Seq {
            ser: self,
            list: PyList::empty(self.py),
            variant: Some(variant),
        })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Map<'py>> {
        Ok(Map {
            ser: self,
            dict: PyDict::new(self.py),
            key: None,
            shape: Shape::Dict,
        })
    }
    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Map<'py>> {
        let mut map = self.serialize_map(Some(len))?;
        if name == RAW_VALUE_TOKEN {
            map.shape = Shape::Raw(None);
        }
        Ok(map)
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Map<'py>> {
        Ok(Map {
            ser: self,
            dict: PyDict::new(self.py),
            key: None,
            shape: Shape::Variant(variant),
        })
    }
}

/// A list being filled (a sequence, a tuple, or a tuple variant's fields).
pub(crate) struct Seq<'py> {
    ser: PySerializer<'py>,
    list: Bound<'py, PyList>,
    variant: Option<&'static str>,
}

impl<'py> Seq<'py> {
    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.list.append(value.serialize(self.ser)?)?;
        Ok(())
    }

    fn done(self) -> Result<Bound<'py, PyAny>> {
        match self.variant {
            Some(variant) => self.ser.variant(variant, self.list.into_any()),
            None => Ok(self.list.into_any()),
        }
    }
}

/// The four list-filling traits, which differ only in the method's name.
macro_rules! seq_traits {
    ($($serialize_trait:ident :: $method:ident),*) => {$(
        impl<'py> ser::$serialize_trait for Seq<'py> {
            type Ok = Bound<'py, PyAny>;
            type Error = Error;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
                self.push(value)
            }
            fn end(self) -> Result<Self::Ok> {
                self.done()
            }
        }
    )*};
}

seq_traits!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// A dict being filled (a map, a struct, or a struct variant's fields).
pub(crate) struct Map<'py> {
    ser: PySerializer<'py>,
    dict: Bound<'py, PyDict>,
    /// The key of `serialize_key`, waiting for its value.
    key: Option<Bound<'py, PyString>>,
    shape: Shape<'py>,
}

/// What a [`Map`] becomes once filled.
enum Shape<'py> {
    /// The dict.
    Dict,
    /// `{variant: dict}`.
    Variant(&'static str),
    /// A `RawValue`: the value of its JSON text (its one field), once read.
    Raw(Option<Bound<'py, PyAny>>),
}

impl<'py> Map<'py> {
    fn field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<()> {
        let value = value.serialize(self.ser)?;
        if let Shape::Raw(raw) = &mut self.shape {
            *raw = Some(parse_json(&value)?);
            return Ok(());
        }
        self.dict.set_item(interned(self.ser.py, key), value)?;
        Ok(())
    }

    fn done(self) -> Result<Bound<'py, PyAny>> {
        match self.shape {
            Shape::Dict => Ok(self.dict.into_any()),
            Shape::Variant(variant) => self.ser.variant(variant, self.dict.into_any()),
            Shape::Raw(raw) => Ok(raw.unwrap_or_else(|| self.ser.none())),
        }
    }
}

impl<'py> ser::SerializeMap for Map<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<()> {
        self.key = Some(key.serialize(KeySerializer { py: self.ser.py })?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        let key = self
            .key
            .take()
            .ok_or_else(|| <Error as ser::Error>::custom("a map value without a key"))?;
        self.dict.set_item(key, value.serialize(self.ser)?)?;
        Ok(())
    }
    fn end(self) -> Result<Self::Ok> {
        self.done()
    }
}

/// The two struct-filling traits, which are the same.
macro_rules! struct_traits {
    ($($serialize_trait:ident),*) => {$(
        impl<'py> ser::$serialize_trait for Map<'py> {
            type Ok = Bound<'py, PyAny>;
            type Error = Error;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<()> {
                self.field(key, value)
            }
            fn end(self) -> Result<Self::Ok> {
                self.done()
            }
        }
    )*};
}

struct_traits!(SerializeStruct, SerializeStructVariant);

/// Integer keys are their decimal text.
macro_rules! integer_keys {
    ($($method:ident: $integer:ty),*) => {$(
        fn $method(self, value: $integer) -> Result<Self::Ok> {
            Ok(PyString::new(self.py, &value.to_string()))
        }
    )*};
}

/// Map keys, as serde_json writes them: strings, and numbers, chars and bools as their text.
struct KeySerializer<'py> {
    py: Python<'py>,
}

fn key_must_be_a_string() -> Error {
    <Error as ser::Error>::custom("key must be a string")
}

impl<'py> ser::Serializer for KeySerializer<'py> {
    type Ok = Bound<'py, PyString>;
    type Error = Error;
    type SerializeSeq = Impossible<Self::Ok, Error>;
    type SerializeTuple = Impossible<Self::Ok, Error>;
    type SerializeTupleStruct = Impossible<Self::Ok, Error>;
    type SerializeTupleVariant = Impossible<Self::Ok, Error>;
    type SerializeMap = Impossible<Self::Ok, Error>;
    type SerializeStruct = Impossible<Self::Ok, Error>;
    type SerializeStructVariant = Impossible<Self::Ok, Error>;

    fn serialize_bool(self, value: bool) -> Result<Self::Ok> {
        Ok(PyString::new(self.py, if value { "true" } else { "false" }))
    }
    integer_keys!(
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64
    );
    fn serialize_f32(self, _value: f32) -> Result<Self::Ok> {
        Err(key_must_be_a_string())
    }
    fn serialize_f64(self, _value: f64) -> Result<Self::Ok> {
        Err(key_must_be_a_string())
    }
    fn serialize_char(self, value: char) -> Result<Self::Ok> {
        Ok(PyString::new(self.py, value.encode_utf8(&mut [0; 4])))
    }
    fn serialize_str(self, value: &str) -> Result<Self::Ok> {
        Ok(PyString::new(self.py, value))
    }
    fn serialize_bytes(self, _value: &[u8]) -> Result<Self::Ok> {
        Err(key_must_be_a_string())
    }
    fn serialize_none(self) -> Result<Self::Ok> {
        Err(key_must_be_a_string())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<Self::Ok> {
        Err(key_must_be_a_string())
    }
    fn serialize_unit(self) -> Result<Self::Ok> {
        Err(key_must_be_a_string())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Self::Ok> {
        Err(key_must_be_a_string())
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Self::Ok> {
        Ok(PyString::new(self.py, variant))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Self::Ok> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<Self::Ok> {
        Err(key_must_be_a_string())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(key_must_be_a_string())
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap> {
        Err(key_must_be_a_string())
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self::SerializeStruct> {
        Err(key_must_be_a_string())
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(key_must_be_a_string())
    }
}
