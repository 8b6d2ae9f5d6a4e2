"""nfvlab.system.build: the cache key of a compiled helper."""
import shutil

from nfvlab.system import build


def _checkout(root, text):
    src = root / "pkg" / "gen.c"
    src.parent.mkdir(parents=True)
    src.write_text(text)
    return src


def _argv(src, out="OUT"):
    return ["cc", "-O2", f"-I{src.parent}", "-o", out, str(src)]


def test_the_same_sources_in_another_checkout_are_the_same_build(tmp_path):
    a = _checkout(tmp_path / "clone-a", "int main(void) { return 0; }\n")
    b = _checkout(tmp_path / "somewhere/else/clone-b", "int main(void) { return 0; }\n")
    assert build.digest([a], _argv(a)) == build.digest([b], _argv(b))


def test_content_flags_and_names_change_the_build(tmp_path):
    a = _checkout(tmp_path / "a", "int main(void) { return 0; }\n")
    b = _checkout(tmp_path / "b", "int main(void) { return 1; }\n")
    key = build.digest([a], _argv(a))
    assert build.digest([b], _argv(b)) != key                          # another source text
    assert build.digest([a], [*_argv(a), "-DFAST"]) != key             # another compiler flag
    assert build.digest([a], [x.replace("-O2", "-O0") for x in _argv(a)]) != key
    renamed = a.with_name("other.c")
    shutil.copy(a, renamed)
    assert build.digest([renamed], _argv(renamed)) != key              # another file name
