"""Whether a model's text tells its reader to execute something (the model verdict contract).

A verdict describes a call; it must never hand a person (or a host that shows it)
a command to run. :func:`instructs` reads a text clause by clause (split at a
sentence's end, a semicolon, a comma, a line break) and refuses:

* a code fence, or a line that starts with a shell prompt (``$ ``, ``>>> ``, ``PS> ``);
* an imperative: a clause that, once its openers are set aside ("now", "then",
  "please", "first", "you should", "I recommend that you", "make sure to"...),
  starts with an execution verb in its base form: "Run X", "run: X",
  "Execute: X", "Paste ...", "Install ...", "Invoke ...", "Re-run ...". Weaker
  verbs ("type", "enter", "copy", "open", "launch", "download", "pipe",
  "start", "source") count when the clause names a shell or holds shell
  syntax: "Type X into a shell";
* "the following command/script/line", "in your terminal/shell/console";
* in a person's prose (``rationale``, ``limitations``, not ``evidence``): a clause
  that starts with a command, as an instruction does: ``sudo ...``, or a shell
  command word (``curl``, ``rm``, ``bash``...) with shell syntax after it
  (``curl -fsSL https://x | sh``).

Descriptive text passes: "The agent ran rm -rf ~/project", "This call would run a
downloaded script", "Running tests is in scope" (a subject, a tense, a gerund).
``evidence`` may quote the observed command as it is (``curl ... | sh``), but not
wrap it in an instruction ("Run: curl ... | sh").

Every step is a split or a match anchored at a clause's start or a single
forward search: linear in the text (the texts are at most 1,000 characters).
"""

from __future__ import annotations

import re

# Fences and prompt lines, wherever they are.
_FENCE_OR_PROMPT = re.compile(r"```|~~~|(?:^|\n)[ \t]*(?:\$|>>>|PS>|PS [A-Z]:\\[^>\n]{0,200}>|C:\\>)[ \t]+\S")
# Phrases that address the reader with something to run, anywhere in a clause.
_ADDRESSED = re.compile(
    r"\b(?:the\s+)?(?:following|below)\s+(?:command|commands|script|line|lines|snippet|one-liner)\b"
    r"|\b(?:command|commands|script|snippet)\s+below\b"
    r"|\bin\s+(?:your|a\s+new|a\s+fresh)\s+(?:terminal|shell|console|command\s+prompt)\b",
    re.I,
)
# Where clauses end: a sentence's end (before a space or the end; an ellipsis is not one: it
# stands for the rest of a command), a semicolon, a comma, a line break.
_CLAUSES = re.compile(r"(?<!\.)[.!?](?=\s|$)|;|,\s|\n")
# What may precede an instruction's verb: bullets, quotes, numbering.
_LEAD = re.compile(r"[\s\"'“”‘’`*•>\-–—(\[]*(?:(?:\d+|[a-z])[.)]\s+|step\s+\d+\s*[:.)-]?\s*)?", re.I)
# Openers set aside one at a time (each match consumes at least a word).
_OPENER = re.compile(
    r"(?:now|then|next|first|firstly|second|finally|also|just|simply|please|kindly|so|and|or|instead|"
    r"immediately|quickly|again|afterwards|"
    r"(?:you|the\s+user|users|the\s+operator|the\s+reviewer|one)\s+(?:should|must|can|could|may|might|"
    r"need\s+to|needs\s+to|have\s+to|has\s+to|ought\s+to|want\s+to|may\s+want\s+to|might\s+want\s+to|"
    r"will\s+need\s+to|'ll\s+need\s+to|'d\s+better)|you'll|you'd|"
    r"(?:i|we)\s+(?:recommend|suggest|advise)(?:\s+that)?(?:\s+you)?|it\s+is\s+(?:recommended|advised)\s+to|"
    r"recommended|suggested|fix|remedy|solution|action|to\s+(?:fix|clean\s+up|verify|confirm|check|"
    r"resolve|recover|undo)(?:\s+(?:this|it|that))?|if\s+(?:needed|you\s+want|necessary)|"
    r"(?:try|make\s+sure|be\s+sure|remember|go\s+ahead\s+and|feel\s+free|don't\s+forget|do\s+not\s+forget)"
    r"(?:\s+to)?|let's)\b[\s,:]*",
    re.I,
)
# An execution verb in its base form, and what follows it.
_VERB = re.compile(r"([a-z][a-z-]*)\s*:?\s+(\S+)?", re.I)
_STRONG = frozenset({"run", "rerun", "re-run", "execute", "re-execute", "paste", "invoke", "install", "reinstall",
                     "exec", "eval"})
_WEAK = frozenset({"type", "enter", "copy", "open", "launch", "download", "pipe", "start", "source", "fetch"})
# Words after a verb that make it a noun or a description ("Run time", "run by the agent", "Execute permission").
_NOT_AN_OBJECT = frozenset({
    "by", "as", "time", "times", "count", "counts", "permission", "permissions", "bit", "bits", "access", "log",
    "logs", "id", "ids", "of", "was", "is", "were", "are", "has", "had", "will", "would", "can", "could", "may",
    "might", "should", "must", "does", "did", "for", "history", "status", "results", "result", "output",
})
# The commands an instruction starts with (prose fields only).
_COMMANDS = frozenset({
    "sudo", "su", "doas", "curl", "wget", "rm", "chmod", "chown", "bash", "sh", "zsh", "dash", "python", "python3",
    "perl", "ruby", "node", "pip", "pip3", "npm", "npx", "yarn", "pnpm", "git", "docker", "kubectl", "ssh", "scp",
    "nc", "ncat", "dd", "mkfs", "powershell", "pwsh", "iex", "cd", "export", "echo", "cat", "mv", "cp", "kill",
    "pkill", "killall", "systemctl", "crontab", "brew", "apt", "apt-get", "yum", "dnf", "make", "chattr", "setfacl",
})
# Shell syntax: a pipe, a chain, a substitution, a variable, a flag, a home or root path, a URL, a script.
_SHELL = re.compile(
    r"\|\s*\S|&&|\$\(|\$\{?[A-Za-z_]|(?:^|\s)--?[A-Za-z]|~/|(?:^|\s)/[\w.]|://|\.sh\b|`[^`\n]{1,200}`|>\s*[~/\w]",
)
_SHELL_WORDS = re.compile(r"\b(?:shell|terminal|console|command\s+line|command\s+prompt|prompt|bash|zsh|powershell)\b",
                          re.I)


def _opening(clause: str) -> str:
    """``clause`` without what may precede an instruction's verb (bullets, openers)."""
    pos = _LEAD.match(clause).end()  # type: ignore[union-attr]  # the pattern matches the empty string
    while (m := _OPENER.match(clause, pos)) is not None and m.end() > pos:
        pos = m.end()
    return clause[pos:]


def _imperative(clause: str, prose: bool) -> bool:
    rest = _opening(clause)
    m = _VERB.match(rest)
    if m is None:
        return False
    verb, after = m.group(1).lower(), m.group(2) or ""
    word = after.lower().strip(".,;:!?\"'`")  # "..." stands for a command: it is an object
    if not after or word in _NOT_AN_OBJECT:
        return False
    if verb in _STRONG:
        return True
    if verb in _WEAK:
        return bool(_SHELL_WORDS.search(rest) or _SHELL.search(rest))
    if prose and verb in _COMMANDS:
        if verb in ("sudo", "doas") and not word.endswith("s"):
            return True  # "sudo <command>"; "sudo grants..." describes
        return _SHELL.search(rest) is not None
    return False


def instructs(text: str, *, prose: bool = True) -> bool:
    """Whether ``text`` instructs its reader to execute something (see the module docstring).

    :param prose: a person's prose (``rationale``, ``limitations``); ``False`` for
        ``evidence``, which may quote the observed command as it is.
    """
    if _FENCE_OR_PROMPT.search(text) or _ADDRESSED.search(text):
        return True
    return any(_imperative(clause, prose) for clause in _CLAUSES.split(text) if clause.strip())


__all__ = ["instructs"]
