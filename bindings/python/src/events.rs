//! A run's pulled items as the Python objects the handlers take, built here in one
//! pass per batch: consecutive output lines become one list of `OutputMessage`s made
//! the way pydantic's `model_construct` makes them (fields in `__dict__`, every field
//! set, no extra, no private) without its per-field work, and never validated (the
//! core already parsed them). Lines of a stream with no handler are not built at all.
//! Every other item is its op-layer dict.
//!
//! The Python layer then calls a handler once per message with no other work per line
//! (bindings/python/python/opensandbox/_bridge.py).

use opensandbox_bindings::stream::{Batch, Item};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PySet, PyString, PyTuple, PyType};

use crate::convert;

/// Group kinds, as the Python layer reads them.
const OTHER: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;

/// `object.__new__` and `object.__setattr__`: pydantic's own way around its
/// `__setattr__` (validation, frozen checks) when it builds an instance.
struct ObjectFns {
    new: Py<PyAny>,
    setattr: Py<PyAny>,
}

static OBJECT_FNS: PyOnceLock<ObjectFns> = PyOnceLock::new();

fn object_fns(py: Python<'_>) -> PyResult<&ObjectFns> {
    OBJECT_FNS.get_or_try_init(py, || {
        let object = py.get_type::<pyo3::types::PyAny>();
        Ok(ObjectFns {
            new: object.getattr("__new__")?.unbind(),
            setattr: object.getattr("__setattr__")?.unbind(),
        })
    })
}

/// Makes `OutputMessage`s of one class for one batch.
struct Messages<'py> {
    py: Python<'py>,
    cls: Bound<'py, PyType>,
    new: Bound<'py, PyAny>,
    setattr: Bound<'py, PyAny>,
    /// Shared by the batch's messages: it already holds every field, so pydantic's
    /// `fields_set.add(name)` on an assignment never changes it.
    fields_set: Bound<'py, PySet>,
    keys: [Bound<'py, PyString>; 3],
    slots: [Bound<'py, PyString>; 4],
    /// The last timestamp's int (a batch's lines mostly share their millisecond).
    stamp: Option<(i64, Bound<'py, PyAny>)>,
}

impl<'py> Messages<'py> {
    fn new(cls: &Bound<'py, PyType>) -> PyResult<Self> {
        let py = cls.py();
        let fns = object_fns(py)?;
        let keys = [
            PyString::intern(py, "text"),
            PyString::intern(py, "timestamp"),
            PyString::intern(py, "is_error"),
        ];
        let fields_set = PySet::new(py, keys.iter())?;
        Ok(Messages {
            py,
            cls: cls.clone(),
            new: fns.new.bind(py).clone(),
            setattr: fns.setattr.bind(py).clone(),
            fields_set,
            keys,
            slots: [
                PyString::intern(py, "__dict__"),
                PyString::intern(py, "__pydantic_fields_set__"),
                PyString::intern(py, "__pydantic_extra__"),
                PyString::intern(py, "__pydantic_private__"),
            ],
            stamp: None,
        })
    }

    fn timestamp(&mut self, ts: i64) -> PyResult<Bound<'py, PyAny>> {
        if let Some((last, obj)) = &self.stamp {
            if *last == ts {
                return Ok(obj.clone());
            }
        }
        let obj = ts.into_pyobject(self.py)?.into_any();
        self.stamp = Some((ts, obj.clone()));
        Ok(obj)
    }

    fn make(&mut self, text: &str, ts: i64, is_error: bool) -> PyResult<Bound<'py, PyAny>> {
        let stamp = self.timestamp(ts)?;
        let m = self.new.call1((&self.cls,))?;
        let d = PyDict::new(self.py);
        d.set_item(&self.keys[0], text)?;
        d.set_item(&self.keys[1], stamp)?;
        d.set_item(&self.keys[2], is_error)?;
        let none = self.py.None();
        let set = &self.setattr;
        set.call1((&m, &self.slots[0], d))?;
        set.call1((&m, &self.slots[1], &self.fields_set))?;
        set.call1((&m, &self.slots[2], &none))?;
        set.call1((&m, &self.slots[3], &none))?;
        Ok(m)
    }
}

/// `(groups, done)`: `groups` a list of `(kind, payload)` in item order, kind 1 / 2 a
/// list of stdout / stderr messages (consecutive lines of one stream), kind 0 one
/// other item as a dict. Output of a stream whose flag is false is dropped.
pub fn to_groups<'py>(
    py: Python<'py>,
    batch: Batch,
    cls: &Bound<'py, PyType>,
    stdout: bool,
    stderr: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let mut messages = Messages::new(cls)?;
    let groups = PyList::empty(py);
    // The open group of output lines: its kind and its messages.
    let mut open: Option<(u8, Bound<'py, PyList>)> = None;
    for item in batch.events {
        match item {
            Item::Output {
                stderr: is_err,
                text,
                timestamp,
            } => {
                if !(if is_err { stderr } else { stdout }) {
                    continue;
                }
                let kind = if is_err { STDERR } else { STDOUT };
                let m = messages.make(&text, timestamp, is_err)?;
                match &open {
                    Some((k, list)) if *k == kind => list.append(m)?,
                    _ => {
                        if let Some((k, list)) = open.take() {
                            groups.append((k, list))?;
                        }
                        open = Some((kind, PyList::new(py, [m])?));
                    }
                }
            }
            Item::Json(v) => {
                if let Some((k, list)) = open.take() {
                    groups.append((k, list))?;
                }
                groups.append((OTHER, convert::to_py(py, &v)?))?;
            }
        }
    }
    if let Some((k, list)) = open.take() {
        groups.append((k, list))?;
    }
    PyTuple::new(
        py,
        [
            groups.into_any(),
            batch.done.into_pyobject(py)?.to_owned().into_any(),
        ],
    )
}
