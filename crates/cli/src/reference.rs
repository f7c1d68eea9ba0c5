//! `sdbench reference` (hidden): the command-line reference in Markdown, generated from the same
//! clap definitions that parse the arguments, so docs/cli-reference.md cannot drift from `--help`;
//! and `--check-args`, which says whether a command line (one from the README, say) parses.

use clap::{CommandFactory, Parser};

use crate::Cli;

#[derive(clap::Args)]
pub struct ReferenceArgs {
    /// Parse these arguments as an `sdbench` command line (without the program name) and exit 0 if
    /// they parse, 1 with clap's message if not; nothing runs.
    #[arg(long, num_args = 1.., allow_hyphen_values = true, value_name = "ARG")]
    check_args: Option<Vec<String>>,
}

pub fn run(args: ReferenceArgs) -> anyhow::Result<()> {
    if let Some(line) = args.check_args {
        Cli::try_parse_from(std::iter::once("sdbench".to_string()).chain(line.iter().cloned()))
            .map_err(|e| anyhow::anyhow!("`sdbench {}` does not parse:\n{e}", line.join(" ")))?;
        return Ok(());
    }
    if let Some(bare) = arguments_without_help() {
        anyhow::bail!("{bare} has no help text: every argument must say what it does");
    }
    let options = clap_markdown::MarkdownOptions::new()
        .title("The `sdbench` command-line reference".to_string())
        .show_footer(false)
        .show_table_of_contents(true);
    print!("{}", clap_markdown::help_markdown_custom::<Cli>(&options));
    Ok(())
}

/// The first visible argument, in any subcommand, that has no help text.
fn arguments_without_help() -> Option<String> {
    fn walk(command: &clap::Command, path: &str) -> Option<String> {
        let path = format!("{path} {}", command.get_name());
        if let Some(arg) = command
            .get_arguments()
            .filter(|a| !a.is_hide_set())
            .find(|a| a.get_help().is_none() && a.get_long_help().is_none())
        {
            return Some(format!("`{path}`'s argument `{}`", arg.get_id()));
        }
        command
            .get_subcommands()
            .filter(|c| !c.is_hide_set())
            .find_map(|c| walk(c, &path))
    }
    let command = Cli::command();
    let bare = command
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .find_map(|c| walk(c, command.get_name()));
    bare
}
