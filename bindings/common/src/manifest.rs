//! `ops_manifest()`: every op, its argument fields (JSON type, required) and its result
//! kind. The fields are read from the argument structs themselves (a probing serde
//! `Deserializer` walks each struct), so the manifest cannot drift from what the op
//! accepts; the op list comes from the same table as the dispatcher (`ops::OPS`).

use std::cell::{Cell, RefCell};

use serde::de::{
    self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};
use serde::Serialize;

use crate::args::{CONNECTION_REF, SANDBOX_REF};

/// One argument of an op.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldSpec {
    /// The JSON key (snake_case).
    pub name: String,
    /// `string`, `int`, `number`, `bool`, `list`, `object`, `string|int` (a sandbox id
    /// or handle), `object|int` (connection overrides or a config handle), `any`.
    #[serde(rename = "type")]
    pub json_type: String,
    /// Whether the key must be present.
    pub required: bool,
    /// Whether `null` is accepted.
    pub nullable: bool,
}

/// One op.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpSpec {
    /// `area.name`.
    pub name: String,
    /// Its arguments, in declaration order.
    pub args: Vec<FieldSpec>,
    /// The shape of its result (README "Result dialect").
    pub result: String,
}

/// The manifest: `{"version": 1, "ops": [...]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Manifest {
    /// Version of the calling convention.
    pub version: u32,
    /// Every op the dispatcher knows.
    pub ops: Vec<OpSpec>,
}

#[derive(Debug)]
struct ProbeError(String);

impl std::fmt::Display for ProbeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProbeError {}

impl de::Error for ProbeError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        ProbeError(msg.to_string())
    }
}

/// What one field's probe saw.
#[derive(Default)]
struct Seen {
    ty: RefCell<Option<&'static str>>,
    nullable: Cell<bool>,
    locked: Cell<bool>,
}

impl Seen {
    fn set(&self, ty: &'static str) {
        if !self.locked.get() {
            *self.ty.borrow_mut() = Some(ty);
        }
    }
}

/// Answers every request of a field's `Deserialize` with a plausible value, noting the
/// JSON type it asked for.
struct ValueProbe<'a>(&'a Seen);

impl<'de, 'a> Deserializer<'de> for ValueProbe<'a> {
    type Error = ProbeError;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        if self.0.locked.get() {
            return v.visit_u64(1);
        }
        self.0.set("any");
        v.visit_unit()
    }
    fn deserialize_bool<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.0.set("bool");
        v.visit_bool(false)
    }
    fn deserialize_i8<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.deserialize_i64(v)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.deserialize_i64(v)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.deserialize_i64(v)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.0.set("int");
        v.visit_i64(1)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.deserialize_u64(v)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.deserialize_u64(v)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.deserialize_u64(v)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.0.set("int");
        v.visit_u64(1)
    }
    fn deserialize_f32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.deserialize_f64(v)
    }
    fn deserialize_f64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.0.set("number");
        v.visit_f64(1.0)
    }
    fn deserialize_char<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.deserialize_str(v)
    }
    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.0.set("string");
        v.visit_str("x")
    }
    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.deserialize_str(v)
    }
    fn deserialize_bytes<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.deserialize_str(v)
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.deserialize_str(v)
    }
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.0.nullable.set(true);
        v.visit_some(self)
    }
    fn deserialize_unit<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.0.set("null");
        v.visit_unit()
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, ProbeError> {
        self.deserialize_unit(v)
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        v: V,
    ) -> Result<V::Value, ProbeError> {
        let ty = match name {
            SANDBOX_REF => Some("string|int"),
            CONNECTION_REF => Some("object|int"),
            _ => None,
        };
        if let Some(ty) = ty {
            self.0.set(ty);
            self.0.locked.set(true);
        }
        v.visit_newtype_struct(self)
    }
    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.0.set("list");
        v.visit_seq(Empty)
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, v: V) -> Result<V::Value, ProbeError> {
        self.deserialize_seq(v)
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        v: V,
    ) -> Result<V::Value, ProbeError> {
        self.deserialize_seq(v)
    }
    fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.0.set("object");
        v.visit_map(Empty)
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, ProbeError> {
        self.0.set("object");
        let sink = RefCell::new(Vec::new());
        v.visit_map(StructMap::new(fields, None, &sink))
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        _v: V,
    ) -> Result<V::Value, ProbeError> {
        Err(ProbeError("enums are not probed".into()))
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        self.deserialize_str(v)
    }
    fn deserialize_ignored_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ProbeError> {
        v.visit_unit()
    }
}

/// An empty list or object.
struct Empty;

impl<'de> SeqAccess<'de> for Empty {
    type Error = ProbeError;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        _seed: T,
    ) -> Result<Option<T::Value>, ProbeError> {
        Ok(None)
    }
}

impl<'de> MapAccess<'de> for Empty {
    type Error = ProbeError;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        _seed: K,
    ) -> Result<Option<K::Value>, ProbeError> {
        Ok(None)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        _seed: V,
    ) -> Result<V::Value, ProbeError> {
        Err(ProbeError("no value".into()))
    }
}

/// Offers every field of a struct (but `omit`) with a probed value.
struct StructMap<'a> {
    fields: &'static [&'static str],
    next: usize,
    omit: Option<&'static str>,
    out: &'a RefCell<Vec<FieldSpec>>,
}

impl<'a> StructMap<'a> {
    fn new(
        fields: &'static [&'static str],
        omit: Option<&'static str>,
        out: &'a RefCell<Vec<FieldSpec>>,
    ) -> Self {
        StructMap {
            fields,
            next: 0,
            omit,
            out,
        }
    }
}

impl<'de, 'a> MapAccess<'de> for StructMap<'a> {
    type Error = ProbeError;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ProbeError> {
        while let Some(name) = self.fields.get(self.next) {
            if Some(*name) == self.omit {
                self.next += 1;
                continue;
            }
            let key: de::value::StrDeserializer<ProbeError> = name.into_deserializer();
            return seed.deserialize(key).map(Some);
        }
        Ok(None)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, ProbeError> {
        let name = self.fields.get(self.next).copied().unwrap_or("?");
        self.next += 1;
        let seen = Seen::default();
        let value = seed.deserialize(ValueProbe(&seen))?;
        self.out.borrow_mut().push(FieldSpec {
            name: name.to_owned(),
            json_type: seen.ty.borrow().unwrap_or("any").to_owned(),
            required: false,
            nullable: seen.nullable.get(),
        });
        Ok(value)
    }
}

/// The top of a probe: a struct whose fields are offered by a [`StructMap`].
struct StructProbe<'a> {
    omit: Option<&'static str>,
    fields: &'a Cell<&'static [&'static str]>,
    out: &'a RefCell<Vec<FieldSpec>>,
}

impl<'de, 'a> Deserializer<'de> for StructProbe<'a> {
    type Error = ProbeError;

    fn deserialize_any<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, ProbeError> {
        Err(ProbeError("argument types are structs".into()))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, ProbeError> {
        self.fields.set(fields);
        v.visit_map(StructMap::new(fields, self.omit, self.out))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 u8 u16 u32 u64 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// The argument fields of `T`: names from its serde field list, JSON types from what
/// each field's `Deserialize` asks for, `required` from whether `T` still parses
/// without it.
///
/// # Errors
/// A message when `T` is not a plain struct (or cannot be probed).
pub fn fields_of<T: de::DeserializeOwned>() -> Result<Vec<FieldSpec>, String> {
    let names = Cell::new(&[][..]);
    let out = RefCell::new(Vec::new());
    T::deserialize(StructProbe {
        omit: None,
        fields: &names,
        out: &out,
    })
    .map_err(|e| format!("cannot probe {}: {e}", std::any::type_name::<T>()))?;
    let mut specs = out.into_inner();
    for spec in &mut specs {
        let name = names
            .get()
            .iter()
            .copied()
            .find(|n| *n == spec.name)
            .unwrap_or("");
        let sink = RefCell::new(Vec::new());
        let without = T::deserialize(StructProbe {
            omit: Some(name),
            fields: &Cell::new(&[][..]),
            out: &sink,
        });
        spec.required = without.is_err();
    }
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{CreateArgs, RunArgs, WriteFilesArgs};

    fn field<'a>(specs: &'a [FieldSpec], name: &str) -> &'a FieldSpec {
        specs.iter().find(|f| f.name == name).unwrap()
    }

    #[test]
    fn probe_reads_names_types_and_required() {
        let run = fields_of::<RunArgs>().unwrap();
        assert_eq!(field(&run, "sandbox").json_type, "string|int");
        assert!(field(&run, "sandbox").required);
        assert_eq!(field(&run, "connection").json_type, "object|int");
        assert!(!field(&run, "connection").required);
        assert_eq!(field(&run, "command").json_type, "string");
        assert!(field(&run, "command").nullable);
        assert_eq!(field(&run, "argv").json_type, "list");
        assert_eq!(field(&run, "timeout_ms").json_type, "int");
        assert_eq!(field(&run, "envs").json_type, "object");
        assert_eq!(field(&run, "handlers").json_type, "bool");
        let create = fields_of::<CreateArgs>().unwrap();
        assert_eq!(field(&create, "timeout_s").json_type, "number");
        assert!(field(&create, "timeout_s").nullable);
        assert_eq!(field(&create, "network_policy").json_type, "object");
        let wf = fields_of::<WriteFilesArgs>().unwrap();
        assert!(field(&wf, "entries").required);
        assert_eq!(field(&wf, "entries").json_type, "list");
    }
}
