#!/usr/bin/env python3
"""Applies the patches `launchguard review --patch` printed to the documents of
a manifest with python3-jsonpatch, an RFC 6902 implementation independent of
launchguard's own, and prints the patched documents as one JSON array (which
`launchguard review` reads as a multi-document input).

Usage: apply_json_patches.py MANIFEST PATCH_LINES
"""
import json
import sys

import jsonpatch
import yaml


def main():
    with open(sys.argv[1], encoding="utf-8") as manifest:
        documents = [d for d in yaml.safe_load_all(manifest) if d is not None]
    with open(sys.argv[2], encoding="utf-8") as lines:
        patches = [json.loads(line) for line in lines if line.strip()]
    if len(documents) != len(patches):
        sys.exit(f"{len(documents)} documents but {len(patches)} patches")
    patched = [jsonpatch.apply_patch(doc, patch) for doc, patch in zip(documents, patches)]
    json.dump(patched, sys.stdout)


if __name__ == "__main__":
    main()
