//! Generator of the .NET P/Invoke declarations (skeleton: the owner fills it in).
