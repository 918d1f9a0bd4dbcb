# SPDX-License-Identifier: MIT
"""The CUDA driver's ABI as the toolkit describes it: the stub libcuda.so's
symbols, the *Typedefs.h prototypes of every ABI variant, and how the two
pair up. Shared by tools/gen-exports and tools/gen-calls."""

import collections
import os
import re
import subprocess
import sys

# (base, pt) -> [(version, symbol), ...] for groups the pairing gets wrong.
# None needed for CUDA 13.0.
OVERRIDES = {}


def die(msg):
    sys.exit(os.path.basename(sys.argv[0]) + ": error: " + msg)


def stub_symbols(stub):
    """{name: (nm type, size)} of the defined dynamic symbols."""
    try:
        out = subprocess.run(["nm", "-D", "--defined-only", "--format=posix", stub],
                             check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        die("nm %s: %s" % (stub, e))
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) < 3:
            continue
        size = int(f[3], 16) if len(f) > 3 else 0
        syms[f[0]] = (f[1], size)
    if not syms:
        die("no dynamic symbols in " + stub)
    return syms


def header_typedefs(incdir):
    """[(base, version, pt, return type)] from every *Typedefs.h."""
    rx = re.compile(r"typedef\s+([\w\s\*]+?)\s*\(\s*CUDAAPI\s*\*\s*PFN_(\w+)\s*\)")
    name_rx = re.compile(r"^(\w+?)_v(\d+)(?:_(ptds|ptsz))?$")
    tds = []
    files = sorted(f for f in os.listdir(incdir) if f.endswith("Typedefs.h"))
    if "cudaTypedefs.h" not in files:
        die("no cudaTypedefs.h in " + incdir)
    for f in files:
        with open(os.path.join(incdir, f)) as fh:
            for m in rx.finditer(fh.read()):
                n = name_rx.match(m.group(2))
                if not n:
                    continue
                tds.append((n.group(1), int(n.group(2)), n.group(3) or "",
                            " ".join(m.group(1).split())))
    return tds


def cuda_version(incdir):
    with open(os.path.join(incdir, "cuda.h")) as fh:
        m = re.search(r"^#define\s+CUDA_VERSION\s+(\d+)", fh.read(), re.M)
    if not m:
        die("no CUDA_VERSION in cuda.h")
    return int(m.group(1))


def header_current(incdir):
    """cuda.h's public `#define name target` mappings: {name: (target, pt)}."""
    with open(os.path.join(incdir, "cuda.h")) as fh:
        text = fh.read()
    text = text.split("#if defined(__CUDA_API_VERSION_INTERNAL)\n    #undef")[0]
    cur = {}
    for m in re.finditer(r"^\s*#define\s+(cu\w+)\s+(?:(cu\w+)|__CUDA_API_PT(DS|SZ)\((cu\w+)\))\s*$",
                         text, re.M):
        if m.group(2):
            cur[m.group(1)] = (m.group(2), "")
        else:
            cur[m.group(1)] = (m.group(4), m.group(3).lower())
    return cur


def split_symbol(sym):
    m = re.match(r"^(\w+?)(?:_v(\d+))?(?:_(ptds|ptsz))?$", sym)
    return m.group(1), int(m.group(2) or 1), m.group(3) or ""


def build(stub, incdir):
    syms = stub_symbols(stub)
    funcs = sorted(s for s, (t, _) in syms.items() if t in "TWi")
    data = sorted(s for s, (t, _) in syms.items() if t not in "TWi")
    index = {s: i for i, s in enumerate(funcs)}

    sym_groups = collections.defaultdict(list)
    for s in funcs:
        base, abi, pt = split_symbol(s)
        sym_groups[(base, pt)].append((abi, s))
    td_groups = collections.defaultdict(dict)
    for base, ver, pt, ret in header_typedefs(incdir):
        td_groups[(base, pt)][ver] = ret

    groups = {}
    for key, members in sym_groups.items():
        if key in OVERRIDES:
            groups[key] = list(OVERRIDES[key])
            continue
        vers = sorted(td_groups.get(key, {}))
        members.sort()
        if len(vers) != len(members):
            die("%s%s: exported %s but typedef versions %s; add an OVERRIDES entry"
                % (key[0], " (" + key[1] + ")" if key[1] else "",
                   [s for _, s in members], vers))
        for v in vers:
            if td_groups[key][v] != "CUresult":
                die("PFN_%s_v%d returns %s, not CUresult: write its default by hand"
                    % (key[0], v, td_groups[key][v]))
        groups[key] = [(v, s) for v, (_, s) in zip(vers, members)]
    for key, members in groups.items():
        for _, s in members:
            if s not in index:
                die("override %s names %s, which the stub does not export" % (key, s))

    # cuda.h's own view of the newest variant, for the record: where it
    # differs from the typedefs, the typedefs (what cuGetProcAddress returns)
    # win, e.g. cuGraphInstantiate is #defined to cuGraphInstantiateWithFlags.
    notes = []
    for name, (target, pt) in sorted(header_current(incdir).items()):
        legacy = groups.get((name, ""))
        if not legacy:
            continue
        if legacy[-1][1] != target:
            notes.append("cuda.h maps %s to %s; cuGetProcAddress(%s, %d) gives %s"
                         % (name, target, name, legacy[-1][0], legacy[-1][1]))
    bases = sorted({b for b, _ in groups})
    return funcs, data, syms, index, groups, bases, notes


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def prototypes(incdir):
    """{(base, version, pt): [(type, name), ...]}: the parameters of every
    PFN_ typedef in cudaTypedefs.h (types with their const and *)."""
    rx = re.compile(r"typedef\s+CUresult\s*\(\s*CUDAAPI\s*\*\s*PFN_(\w+?)_v(\d+)(?:_(ptds|ptsz))?\s*\)"
                    r"\s*\(([^;]*)\)\s*;", re.S)
    with open(os.path.join(incdir, "cudaTypedefs.h")) as fh:
        text = fh.read()
    protos = {}
    for m in rx.finditer(text):
        params = []
        body = " ".join(m.group(4).split())
        if body and body != "void":
            for p in body.split(","):
                p = p.strip()
                pm = re.match(r"^(.*?)(\w+)$", p)
                if not pm or "(" in p:
                    params = None	# a function pointer or an unnamed parameter
                    break
                params.append((" ".join(pm.group(1).replace("*", " * ").split()), pm.group(2)))
        protos[(m.group(1), int(m.group(2)), m.group(3) or "")] = params
    return protos


class CudaTypes:
    """What cuda.h says of a type: its alias chain, whether it is an enum,
    an opaque handle (a pointer typedef) or a struct/union with no pointer
    anywhere inside (flat: its bytes are its value)."""

    def __init__(self, incdir):
        with open(os.path.join(incdir, "cuda.h")) as fh:
            text = re.sub(r"/\*.*?\*/", "", fh.read(), flags=re.S)
        text = re.sub(r"//[^\n]*", "", text)
        self.alias = {}
        self.enums = set()
        self.pointers = set()
        self.bodies = {}
        for m in re.finditer(r"typedef\s+(struct|union|enum)\s+(\w+)\s*\{", text):
            depth, i = 1, m.end()
            while depth:
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            body = text[m.end():i - 1]
            tail = text[i:text.index(";", i)]
            names = [n.strip() for n in tail.split(",")]
            for n in names:
                if n.startswith("*"):
                    self.pointers.add(n.lstrip("* "))
                elif m.group(1) == "enum":
                    self.enums.add(n)
                else:
                    self.bodies[n] = body
            tag = m.group(2)
            if m.group(1) == "enum":
                self.enums.add(tag)
            else:
                self.bodies[tag] = body
        for m in re.finditer(r"typedef\s+(?:struct|union)\s+\w+\s*\*\s*(\w+)\s*;", text):
            self.pointers.add(m.group(1))
        for m in re.finditer(r"typedef\s+([\w ]+?)\s+(\w+)\s*;", text):
            src = m.group(1).strip()
            # The first of #if/#else alternatives is the LP64 one.
            if src.startswith(("struct ", "union ", "enum ")):
                self.alias.setdefault(m.group(2), src.split()[1])
            else:
                self.alias.setdefault(m.group(2), src)
        for m in re.finditer(r"typedef\s+([\w ]+?)\s*\*\s*(\w+)\s*;", text):
            self.pointers.add(m.group(2))

    def resolve(self, t):
        seen = set()
        while t in self.alias and t not in seen:
            seen.add(t)
            t = self.alias[t]
        return t

    def is_enum(self, t):
        return self.resolve(t) in self.enums or t in self.enums

    def is_pointer(self, t):
        return t in self.pointers or self.resolve(t) in self.pointers

    def is_struct(self, t):
        return self.resolve(t) in self.bodies

    def is_flat(self, t, depth=0):
        """A struct/union whose members hold no pointer or handle."""
        body = self.bodies.get(self.resolve(t))
        if body is None or depth > 8:
            return False
        if "*" in body:
            return False
        for word in set(re.findall(r"\b[A-Za-z_]\w*\b", body)):
            if self.is_pointer(word):
                return False
            if word != t and self.is_struct(word) and not self.is_flat(word, depth + 1):
                return False
        return True
