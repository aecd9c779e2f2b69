"""The one writer: every file and folder legalir writes goes through here.

Files (:func:`open_file`, :func:`write_text`, :func:`write_json`): written to
``NAME.tmp-PID[-THREAD]`` in the same folder, flushed and fsynced, then
renamed over ``NAME`` (and the folder fsynced). A reader sees the old file or
the complete new one, never a part. On an error, Ctrl-C or SIGTERM the
temporary file is removed; one left by a killed process (its PID no longer
running) is removed by the next write of the same file.

Folders (:func:`atomic_dir`): built under ``NAME.tmp-PID`` beside the target,
every file fsynced, then published in one rename. Rules:

* **Never delete what legalir did not write.** Every folder legalir publishes
  holds a marker, ``.legalir-output.json``: its kind, and the registry of
  everything in it at any depth, as the file registry records files (each
  file's size, modification time in nanoseconds and SHA-256, taken before
  the folder is published; each sub-folder; each link and where it points).
  A file legalir writes later into a folder it published (embedding shards,
  their manifest: :func:`open_file`) is recorded there too, before and after
  its rename (a writer killed between them leaves a file still recorded).
  An existing target is replaced only when it is empty, or a legalir output
  of the same kind whose marker proves every entry legalir's and unchanged
  (:func:`audit`; the hash is read only when size and time match). Anything
  else in it (a user's file, at any depth, or a file edited since legalir
  wrote it) makes the write refuse with an :class:`OutputError` (exit status
  2) naming each entry, and leaves it untouched; ``overwrite=True``
  (``--overwrite``) is the user's explicit yes, and the warning it logs
  names what it replaces. A legalir output of another kind needs
  ``overwrite=True`` too. A folder that is no legalir output at all (no
  marker) is refused even with ``--overwrite``; outputs written before
  markers existed are recognised by their own files (``legacy=``), and a
  marker written before markers recorded files (no ``files`` table) by its
  top-level names, as that legalir did. A symbolic link that legalir did not
  make is refused as a target too. An older version removed by a publish is
  checked the same way: one holding what legalir cannot prove its own is
  left in place, with a warning (removed, and logged, under ``--overwrite``).
* **One writer at a time.** An exclusive ``flock`` on ``.NAME.lock`` beside the
  target is held while building: a second process writing the same output
  stops at once with an :class:`OutputError` naming the first one's PID (it
  does not wait: exit status 2). The lock file is removed on release; one
  left by a killed process holds no lock (the kernel drops it) and is reused.
* **Leftovers are cleaned.** ``NAME.tmp-PID`` folders and files whose PID is
  no longer running (a killed build) are removed by the next write of
  ``NAME``; those of a live process are left alone.
* **Readers keep a consistent view** (``versioned=True``, used for Lucene and
  FAISS indexes). ``NAME`` is then a symbolic link to ``NAME.vN``; a build
  writes ``NAME.v(N+1)`` and switches the link in one rename. A search that
  opened ``NAME`` before or during the build keeps reading version N (Lucene
  and FAISS resolve the link when they open the index, and search a
  partitioned index through the resolved path), so it never sees a half
  index nor a mix of old and new partitions. Version N is kept until the
  next build publishes, then removed; older ones are removed at once, except
  a **pinned** one (:func:`pin`: a shared ``flock`` on the version folder
  itself, held by a reader such as `legalir serve` for as long as it reads
  that version, from any process): a publish leaves it, and the first
  publish after it is unpinned removes it. Other
  outputs are replaced by an atomic exchange (``renameat2(RENAME_EXCHANGE)``,
  two renames where the kernel lacks it) and the old copy removed.

Output files (:func:`check_file`; :func:`open_file` with ``output=True``, which
every writer of a file a user names uses: runs, topics, qrels, fusion
settings, reports). The same two rules as folders, for files:

* **Never write onto an input.** A command's output file may not be one of
  its own inputs: same resolved path (links followed) or same file (device
  and inode: a hard link). Refused even with ``--force``: the input would be
  gone before it was read whole. The command line names a command's inputs
  once (:func:`command`, set by the shared ``--force`` option from the
  command's existing-path arguments); library functions pass ``inputs=``.
* **Never replace a file legalir did not write.** An existing file is
  replaced only when it is empty, or legalir wrote it and it is unchanged
  since; anything else (a user's ``notes.txt``, a run a user edited, a run
  another tool wrote in the same format) needs ``force=True`` (``--force``).
  How a file is known to be legalir's, without changing any format a user
  reads (a TREC run stays a plain TREC run): each folder holding output files
  has a small registry, ``.legalir-files.json`` (name -> size, modification
  time in nanoseconds and SHA-256 of the file as legalir published it; the
  hash is taken from the temporary file before it is renamed into place). A
  file is legalir's only while its registry entry says so and its size, time
  and hash all match (the hash is read only when size and time match), so an
  edit, a copy over it, a ``touch`` or a file put there by hand makes it the
  user's again. Nothing is guessed from a file's content: a file in no
  registry is the user's. A registry that is not one legalir wrote (not JSON,
  unreadable, a symbolic link) counts as naming no file, is never written
  (through a link or over its content) and the refusal says so. The registry
  is itself written atomically (temporary file and rename, under a ``flock``
  on ``.legalir-files.lock`` beside it). Files inside a folder that legalir
  builds (``NAME.tmp-PID``) or a marked legalir folder are governed by that
  folder's marker, not by a registry.
"""
from __future__ import annotations

# one module per job (common, files, locks, outputs, ownership, versioning); the names other modules use are
# here (``__all__``); a private helper is imported from the module that defines it, where it is needed
from legalir.base.atomic.common import MARKER, REGISTRY, OutputError, abandon, read_marker
from legalir.base.atomic.files import open_file, write_bytes, write_json, write_text
from legalir.base.atomic.locks import lock
from legalir.base.atomic.outputs import atomic_dir, check_target, copy_linked, newest_of_each_release
from legalir.base.atomic.ownership import Command, FolderAudit, audit, check_file, command, written_by_legalir
from legalir.base.atomic.versioning import Pin, current, pin, pinned, versions

__all__ = [
    "MARKER", "REGISTRY", "Command", "FolderAudit", "OutputError", "Pin", "abandon", "atomic_dir", "audit",
    "check_file", "check_target", "command", "copy_linked", "current", "lock", "newest_of_each_release",
    "open_file", "pin", "pinned", "read_marker", "versions", "write_bytes", "write_json", "write_text",
    "written_by_legalir",
]
