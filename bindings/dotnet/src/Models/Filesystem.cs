using System;
using System.Collections.Generic;
using OpenSandbox.Internal;

namespace OpenSandbox.Models
{
    public class SandboxFileInfo
    {
        public string Path { get; set; }
        /// <summary>file, directory, symlink or other.</summary>
        public string Type { get; set; }
        public long? Size { get; set; }
        public DateTime? ModifiedAt { get; set; }
        public DateTime? CreatedAt { get; set; }
        /// <summary>Octal digits written as a decimal number (644).</summary>
        public int? Mode { get; set; }
        public string Owner { get; set; }
        public string Group { get; set; }

        internal static SandboxFileInfo FromJson(object j)
        {
            var mode = Json.Long(j, "mode");
            return new SandboxFileInfo
            {
                Path = Json.Str(j, "path"),
                Type = Json.Str(j, "type"),
                Size = Json.Long(j, "size"),
                ModifiedAt = Json.Time(j, "modified_at"),
                CreatedAt = Json.Time(j, "created_at"),
                Mode = mode.HasValue ? (int?)(int)mode.Value : null,
                Owner = Json.Str(j, "owner"),
                Group = Json.Str(j, "group"),
            };
        }
    }

    public class Permission
    {
        public int Mode { get; set; }
        public string Owner { get; set; }
        public string Group { get; set; }
    }

    /// <summary>A file to write. Data: string (UTF-8), byte[], Stream, or IAsyncEnumerable&lt;byte[]&gt;; streams are uploaded chunk by chunk.</summary>
    public class WriteEntry
    {
        public string Path { get; set; }
        public object Data { get; set; }
        public int? Mode { get; set; }
        public string Owner { get; set; }
        public string Group { get; set; }
    }

    public class CreateDirectoryEntry
    {
        public string Path { get; set; }
        public int? Mode { get; set; }
        public string Owner { get; set; }
        public string Group { get; set; }
    }

    public class SearchEntry
    {
        public string Path { get; set; }
        public string Pattern { get; set; }
    }

    public class MoveEntry
    {
        public string Src { get; set; }
        public string Dest { get; set; }
    }

    public class ContentReplaceEntry
    {
        public string Path { get; set; }
        public string OldContent { get; set; }
        public string NewContent { get; set; }
    }

    /// <summary>How many replacements were made in one file (ReplaceContentsDetailedAsync).</summary>
    public class ContentReplaceResult
    {
        public string Path { get; set; }
        public long ReplacedCount { get; set; }
    }

    public class SetPermissionEntry
    {
        public string Path { get; set; }
        public int Mode { get; set; }
        public string Owner { get; set; }
        public string Group { get; set; }
    }

    public class ReadFileOptions
    {
        /// <summary>Text encoding name (default utf-8).</summary>
        public string Encoding { get; set; }
        /// <summary>A Range header value, e.g. "bytes=0-1023".</summary>
        public string Range { get; set; }
        /// <summary>First line to return (1-based).</summary>
        public int? Offset { get; set; }
        /// <summary>Number of lines to return.</summary>
        public int? Limit { get; set; }
    }

    public class ReadBytesOptions
    {
        public string Range { get; set; }
        public int? Offset { get; set; }
        public int? Limit { get; set; }
    }
}
