"""Validates iosim's JSON outputs (and the measured files it reads) against schemas/*.schema.json.

Usage: check_schema.py SCHEMA_DIR KIND FILE...   (KIND: run, compare, sweep, validate, kvcache, layer,
                                                tune, profile, model, measurements)
       check_schema.py SCHEMA_DIR --meta          (every schema against its meta-schema)
Exit 1 naming the file, the failing value's path and the rule it broke. Uses Debian's
python3-jsonschema; the schemas refer to each other by file name (their $id is
https://iosim.invalid/schemas/KIND.schema.json, a reserved name that resolves nowhere), resolved
from SCHEMA_DIR, never from the network.
"""
import json
import pathlib
import sys

import jsonschema


def load_store(schema_dir):
    store = {}
    for path in sorted(pathlib.Path(schema_dir).glob("*.schema.json")):
        schema = json.loads(path.read_text())
        store[schema["$id"]] = schema
    return store


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    store = load_store(argv[1])
    if argv[2] == "--meta":
        for schema_id, schema in store.items():
            jsonschema.validators.validator_for(schema).check_schema(schema)
            print(f"ok: {schema_id} is a valid schema")
        return 0
    kind, files = argv[2], argv[3:]
    schema = store.get(f"https://iosim.invalid/schemas/{kind}.schema.json")
    if schema is None:
        print(f"no {kind}.schema.json in {argv[1]}", file=sys.stderr)
        return 2
    cls = jsonschema.validators.validator_for(schema)
    resolver = jsonschema.RefResolver.from_schema(schema, store=store)
    validator = cls(schema, resolver=resolver)
    status = 0
    for name in files:
        with open(name) as f:
            doc = json.load(f)
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        for e in errors[:5]:
            path = "/".join(str(p) for p in e.absolute_path) or "(top level)"
            print(f"{name}: {path}: {e.message}", file=sys.stderr)
        if errors:
            status = 1
        else:
            print(f"ok: {name} is a valid {kind} document")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
