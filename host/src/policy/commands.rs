//! Which commands a call may run inside a guest: a rule's `commands`, a
//! list of argv patterns, and the shell rule.
//!
//! A pattern is matched element by element against the call's `command`
//! argument (an argv list): a literal matches exactly that argument, `"*"`
//! exactly one argument of any value, `"**"` (only as the last element) the
//! rest, zero or more. A shell as the program (or behind a launcher such as
//! `sudo` or `env`) is refused unless a matching pattern names it as a
//! literal: `"*"` never lets a shell in, because a shell runs any command.

use super::shown::{show_list, show_value};

/// Where an argv stops matching the closest pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The closest pattern, as written.
    pub closest: String,
    /// Where it differs, e.g. `wants "status" at argument 2, not "restart"`.
    pub differs: String,
}

/// The most elements one pattern may have: argv patterns are short, and a
/// longer one is more likely a mistake than a command.
pub const MAX_ELEMENTS: usize = 64;

/// Programs that run whatever command text they are given.
const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "dash",
    "zsh",
    "ksh",
    "mksh",
    "csh",
    "tcsh",
    "fish",
    "ash",
    "busybox",
    "cmd",
    "powershell",
    "pwsh",
];

/// Programs that run another program named by a later argument, so a
/// shell can hide behind them (`sudo bash`, `env -i sh`, `timeout 5 sh`).
const LAUNCHERS: &[&str] = &[
    "env", "sudo", "doas", "su", "runuser", "nice", "nohup", "timeout", "setsid", "stdbuf",
    "xargs", "chroot", "nsenter", "ionice", "taskset", "time", "watch", "flock",
];

/// One element of an argv pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Element {
    /// Exactly this argument.
    Literal(String),
    /// `"*"`: exactly one argument.
    One,
    /// `"**"`: the rest, zero or more arguments.
    Rest,
}

/// One checked argv pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgvPattern {
    elements: Vec<Element>,
    /// As written, for messages.
    written: Vec<String>,
}

/// A rule's checked `commands`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandPatterns {
    patterns: Vec<ArgvPattern>,
}

/// How far a pattern matches an argv: the elements it matched before it
/// stopped, and why it stopped (`None`: it matched the whole argv).
struct Reach {
    matched: usize,
    miss: Option<String>,
}

impl ArgvPattern {
    /// Checks one pattern as written; the error is the problem and the fix.
    pub fn parse(written: &[String]) -> Result<ArgvPattern, (String, String)> {
        if written.is_empty() {
            return Err((
                "an empty pattern matches no command".into(),
                "give the program and its arguments, e.g. [\"df\", \"-h\"]".into(),
            ));
        }
        if written.len() > MAX_ELEMENTS {
            return Err((
                format!(
                    "a pattern has {} elements, more than {MAX_ELEMENTS}",
                    written.len()
                ),
                "end the pattern with \"**\" to allow any further arguments".into(),
            ));
        }
        let last = written.len() - 1;
        let elements = written
            .iter()
            .enumerate()
            .map(|(i, e)| match e.as_str() {
                "*" => Ok(Element::One),
                "**" if i == last => Ok(Element::Rest),
                "**" => Err((
                    format!(
                        "\"**\" stands for the rest of the command, and it is element {} of {}",
                        i + 1,
                        written.len()
                    ),
                    "put \"**\" last, or use \"*\" for exactly one argument".into(),
                )),
                _ => Ok(Element::Literal(e.clone())),
            })
            .collect::<Result<_, _>>()?;
        Ok(ArgvPattern {
            elements,
            written: written.to_vec(),
        })
    }

    /// How far this pattern matches `argv`.
    fn reach(&self, argv: &[String]) -> Reach {
        for (i, element) in self.elements.iter().enumerate() {
            // Arguments are numbered from 1, the program being argument 1.
            let n = i + 1;
            let miss = match (element, argv.get(i)) {
                (Element::Rest, _) => {
                    return Reach {
                        matched: argv.len(),
                        miss: None,
                    };
                }
                (Element::One, Some(_)) => continue,
                (Element::Literal(want), Some(got)) if want == got => continue,
                (Element::Literal(want), Some(got)) => format!(
                    "wants {} at argument {n}, not {}",
                    show_value(want),
                    show_value(got)
                ),
                (Element::Literal(want), None) => format!(
                    "wants {} at argument {n}, and the command has only {}",
                    show_value(want),
                    argv.len()
                ),
                (Element::One, None) => format!(
                    "wants an argument at {n}, and the command has only {}",
                    argv.len()
                ),
            };
            return Reach {
                matched: i,
                miss: Some(miss),
            };
        }
        if argv.len() > self.elements.len() {
            return Reach {
                matched: self.elements.len(),
                miss: Some(format!(
                    "ends after argument {}, and the command has {} (end the pattern with \"**\" to allow more)",
                    self.elements.len(),
                    argv.len()
                )),
            };
        }
        Reach {
            matched: argv.len(),
            miss: None,
        }
    }

    /// Whether the pattern names argument `i` literally (so a shell there
    /// is the operator's explicit choice).
    fn names_literally(&self, i: usize) -> bool {
        matches!(self.elements.get(i), Some(Element::Literal(_)))
    }

    /// As written, e.g. `["systemctl","status","*"]`.
    pub fn written(&self) -> &[String] {
        &self.written
    }
}

impl CommandPatterns {
    /// The checked patterns, in the order written (the order breaks ties
    /// when naming the closest pattern).
    pub fn new(patterns: Vec<ArgvPattern>) -> CommandPatterns {
        CommandPatterns { patterns }
    }

    /// The patterns, as written.
    pub fn patterns(&self) -> &[ArgvPattern] {
        &self.patterns
    }

    /// The patterns that match `argv` whole.
    fn matching<'p>(&'p self, argv: &'p [String]) -> impl Iterator<Item = &'p ArgvPattern> + 'p {
        self.patterns
            .iter()
            .filter(move |p| p.reach(argv).miss.is_none())
    }

    /// Why `argv` matches no pattern, naming the closest (the longest
    /// matching prefix, then the first written) and where it differs; `None`
    /// when some pattern matches.
    pub fn mismatch(&self, argv: &[String]) -> Option<Mismatch> {
        let mut best: Option<(&ArgvPattern, Reach)> = None;
        for pattern in &self.patterns {
            let reach = pattern.reach(argv);
            // A pattern that matches ends the search: no mismatch.
            reach.miss.as_ref()?;
            // Strictly longer only: the first written wins a tie.
            if best.as_ref().is_none_or(|(_, b)| reach.matched > b.matched) {
                best = Some((pattern, reach));
            }
        }
        let (closest, reach) = best?;
        Some(Mismatch {
            closest: show_list(closest.written()),
            differs: reach.miss.unwrap_or_default(),
        })
    }
}

/// The name a program is known by: after the last `/` or `\`, lower-case,
/// without a trailing `.exe` (`/usr/bin/Bash`, `C:\Windows\cmd.exe`).
fn program_name(arg: &str) -> String {
    let base = arg.rsplit(['/', '\\']).next().unwrap_or(arg);
    let lower = base.to_ascii_lowercase();
    match lower.strip_suffix(".exe") {
        Some(stem) => stem.to_string(),
        None => lower,
    }
}

/// Whether `arg` names a shell, by its program name.
pub fn is_shell(arg: &str) -> bool {
    SHELLS.contains(&program_name(arg).as_str())
}

/// Why `argv` may not run because it starts a shell, or `None`. A shell
/// at argument `i` is let through only when a pattern that matches the
/// whole argv names argument `i` literally: with no `commands` list, never.
/// Only argument 1 counts, and any later argument when argument 1 is a
/// launcher (`sudo`, `env`, `timeout`...).
pub fn shell_refusal(argv: &[String], patterns: Option<&CommandPatterns>) -> Option<String> {
    let first = argv.first()?;
    let launcher = LAUNCHERS.contains(&program_name(first).as_str());
    let shell_at = argv
        .iter()
        .enumerate()
        .take(if launcher { argv.len() } else { 1 })
        .find(|(_, a)| is_shell(a))
        .map(|(i, _)| i)?;
    let named = patterns.is_some_and(|p| p.matching(argv).any(|m| m.names_literally(shell_at)));
    if named {
        return None;
    }
    let shell = show_value(&argv[shell_at]);
    let how = if shell_at == 0 {
        format!("its program {shell} is a shell")
    } else {
        format!(
            "it starts the shell {shell} (argument {}) through the launcher {}",
            shell_at + 1,
            show_value(first)
        )
    };
    Some(format!(
        "command {} is refused: {how}, and a shell runs any command. Ask for the command itself; an operator who means to allow this shell names it literally in a pattern of `commands`",
        show_list(argv)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn patterns(list: &[&[&str]]) -> CommandPatterns {
        CommandPatterns::new(
            list.iter()
                .map(|p| ArgvPattern::parse(&argv(p)).unwrap())
                .collect(),
        )
    }

    fn example() -> CommandPatterns {
        patterns(&[
            &["systemctl", "status", "*"],
            &["df", "-h"],
            &["journalctl", "-u", "*", "-n", "*", "--no-pager"],
        ])
    }

    #[test]
    fn literals_match_exactly() {
        let p = example();
        assert!(p.mismatch(&argv(&["df", "-h"])).is_none());
        assert!(p.mismatch(&argv(&["df", "-H"])).is_some());
        assert!(p.mismatch(&argv(&["df"])).is_some());
        assert!(p.mismatch(&argv(&["df", "-h", "/"])).is_some());
        assert!(p.mismatch(&argv(&["/bin/df", "-h"])).is_some());
    }

    #[test]
    fn a_star_is_exactly_one_argument() {
        let p = example();
        assert!(
            p.mismatch(&argv(&["systemctl", "status", "nginx"]))
                .is_none()
        );
        assert!(p.mismatch(&argv(&["systemctl", "status", ""])).is_none());
        assert!(p.mismatch(&argv(&["systemctl", "status"])).is_some());
        assert!(
            p.mismatch(&argv(&["systemctl", "status", "a", "b"]))
                .is_some()
        );
        assert!(
            p.mismatch(&argv(&[
                "journalctl",
                "-u",
                "nginx",
                "-n",
                "50",
                "--no-pager"
            ]))
            .is_none()
        );
    }

    #[test]
    fn a_double_star_is_the_rest_zero_or_more() {
        let p = patterns(&[&["ls", "**"]]);
        assert!(p.mismatch(&argv(&["ls"])).is_none());
        assert!(p.mismatch(&argv(&["ls", "-la", "/tmp"])).is_none());
        assert!(p.mismatch(&argv(&["cat", "-la"])).is_some());
        let e = ArgvPattern::parse(&argv(&["ls", "**", "x"])).unwrap_err();
        assert!(e.0.contains("element 2 of 3"), "{e:?}");
        assert!(ArgvPattern::parse(&[]).is_err());
        let long: Vec<String> = (0..=MAX_ELEMENTS).map(|i| i.to_string()).collect();
        assert!(ArgvPattern::parse(&long).unwrap_err().0.contains("65"));
    }

    #[test]
    fn the_closest_pattern_is_the_longest_prefix_then_the_first() {
        let p = example();
        let m = p
            .mismatch(&argv(&["systemctl", "restart", "nginx"]))
            .unwrap();
        assert_eq!(m.closest, r#"["systemctl","status","*"]"#);
        assert_eq!(m.differs, r#"wants "status" at argument 2, not "restart""#);
        let m = p
            .mismatch(&argv(&["journalctl", "-u", "nginx", "-n", "5"]))
            .unwrap();
        assert!(m.closest.starts_with(r#"["journalctl""#), "{m:?}");
        assert_eq!(
            m.differs,
            r#"wants "--no-pager" at argument 6, and the command has only 5"#
        );
        let m = p.mismatch(&argv(&["df", "-h", "/"])).unwrap();
        assert_eq!(m.closest, r#"["df","-h"]"#);
        assert!(
            m.differs
                .starts_with("ends after argument 2, and the command has 3")
        );
        let m = p.mismatch(&argv(&["systemctl", "status"])).unwrap();
        assert_eq!(
            m.differs,
            "wants an argument at 3, and the command has only 2"
        );
        // Nothing in common: the first pattern.
        let m = p.mismatch(&argv(&["rm", "-rf", "/"])).unwrap();
        assert_eq!(m.closest, r#"["systemctl","status","*"]"#);
        // A tie goes to the first written.
        let p = patterns(&[&["a", "x"], &["a", "y"]]);
        assert_eq!(
            p.mismatch(&argv(&["a", "z"])).unwrap().closest,
            r#"["a","x"]"#
        );
    }

    #[test]
    fn a_shell_is_refused_by_any_name() {
        for program in [
            "sh",
            "bash",
            "/bin/bash",
            "/usr/bin/env/../zsh",
            "BASH",
            "C:\\Windows\\System32\\cmd.exe",
            "PowerShell.EXE",
            "pwsh",
            "busybox",
            "fish",
        ] {
            let why = shell_refusal(&argv(&[program, "-c", "id"]), None);
            assert!(
                why.as_ref().is_some_and(|w| w.contains("is a shell")),
                "{program}: {why:?}"
            );
        }
        for program in ["bash5", "shx", "python3", "/bin/cat", "cmd.exe.bak"] {
            assert!(
                shell_refusal(&argv(&[program, "-c"]), None).is_none(),
                "{program}"
            );
        }
    }

    #[test]
    fn a_shell_behind_a_launcher_is_refused() {
        for launched in [
            &["sudo", "bash"][..],
            &["/usr/bin/env", "-i", "sh", "-c", "id"],
            &["timeout", "5", "/bin/dash"],
            &["nice", "-n", "5", "sudo", "zsh"],
            &["xargs", "sh"],
        ] {
            let why = shell_refusal(&argv(launched), None).unwrap();
            assert!(why.contains("through the launcher"), "{why}");
        }
        // Not a launcher: its arguments are data.
        assert!(shell_refusal(&argv(&["grep", "bash", "/etc/shells"]), None).is_none());
        assert!(shell_refusal(&argv(&["sudo", "systemctl", "status"]), None).is_none());
    }

    #[test]
    fn a_shell_runs_only_when_a_pattern_names_it_literally() {
        let star = patterns(&[&["*", "-c", "*"], &["sudo", "*"]]);
        assert!(shell_refusal(&argv(&["bash", "-c", "id"]), Some(&star)).is_some());
        assert!(shell_refusal(&argv(&["sudo", "sh"]), Some(&star)).is_some());
        let named = patterns(&[&["bash", "/opt/check.sh"], &["sudo", "sh", "**"]]);
        assert!(shell_refusal(&argv(&["bash", "/opt/check.sh"]), Some(&named)).is_none());
        assert!(shell_refusal(&argv(&["sudo", "sh", "-c", "x"]), Some(&named)).is_none());
        // Named, but the pattern does not match this argv.
        assert!(shell_refusal(&argv(&["bash", "-c", "id"]), Some(&named)).is_some());
        // A literal names only its own spelling.
        assert!(shell_refusal(&argv(&["/bin/bash", "/opt/check.sh"]), Some(&named)).is_some());
    }
}
