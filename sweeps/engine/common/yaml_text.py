"""A YAML file a person wrote (a sweep file, a cluster YAML) that is not text the YAML reader
takes, said in one line with its fix.

The files are read as bytes and handed to PyYAML, which decodes them as YAML allows: UTF-8,
or UTF-16 with its byte-order mark (what a Windows editor's "Unicode" writes). What it cannot
decode raises yaml.reader.ReaderError: a byte that is not UTF-8 (a latin-1 file's 0xe9), or
a character YAML forbids (the NULs of UTF-16 written without its mark)."""

import yaml


def not_text(exc: yaml.reader.ReaderError) -> str:
    """The reader's error in words, with the fix."""
    if exc.encoding != "unicode":              # a byte it could not decode (PyYAML's reader)
        return (f"not UTF-8 text (byte 0x{exc.character:02x} at offset {exc.position}: "
                f"{exc.reason}; latin-1 or another 8-bit encoding?): save it as UTF-8")
    return (f"holds the character U+{exc.character:04X} at offset {exc.position}, which YAML "
            "does not allow (UTF-16 without its byte-order mark?): save it as UTF-8")
