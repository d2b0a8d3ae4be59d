//! One optimization from start to end: the plan of the prompt as read, the split, the baseline on the
//! train cases, the candidates (demonstrations and ablations first, then the proposer's edits of the
//! best candidate so far) each checked and run on the train cases within the budget, the Pareto front,
//! the held-out runs of the front, the paired tests and the ranking; the record, kept or not by the
//! caller. A cancel stops it between or inside evals and keeps what was scored.

use std::collections::HashMap;
use std::time::Instant;

use futures_util::FutureExt;

use super::evaluate::{self, Cancel, Edit, Scored};
use super::mutate::{self, Demo};
use super::propose::{self, Proposal, Proposer, ProposerModel, Tried};
use super::record::{Budget, Candidate, Cost, Optimization, RoleCost, FORMAT};
use super::{select, split, stats, OptimizeError, OptimizeEvent, OptimizeOptions};
use crate::eval::score::Verdict;
use crate::eval::{EvalOptions, EvalPlan};
use crate::run::record::now_ms;
use crate::run::Stop;

/// A candidate with what stays in memory: its edit and its train cases as scored.
struct Entry {
    candidate: Candidate,
    edit: Edit,
    train: Vec<Scored>,
}

/// The state of one optimization.
struct Session<'a, F> {
    options: &'a OptimizeOptions,
    plan: EvalPlan,
    split: split::Split,
    original: Edit,
    entries: Vec<Entry>,
    cost: Cost,
    budget: Budget,
    calls: Vec<super::record::ProposerCall>,
    concurrency: usize,
    cancel: Cancel,
    cancelled: bool,
    /// What each candidate's cells cost so far, by id.
    spent: HashMap<String, RoleCost>,
    stopped: Option<String>,
    sink: F,
}

/// Runs the optimization `options` asks for, reporting to `sink`, stopped by `cancel`. `Err` is bad
/// input (the flag or file named) found before any model runs.
pub async fn run<F, C>(options: &OptimizeOptions, sink: F, cancel: C) -> Result<Optimization, OptimizeError>
where
    F: FnMut(OptimizeEvent) + Send,
    C: std::future::Future<Output = Stop> + Send + 'static,
{
    let (started_at_ms, started) = (now_ms(), Instant::now());
    if options.budget == 0 {
        return Err(OptimizeError::Input("--budget 0: give the cells that may be scored, at least the cases".into()));
    }
    let eval = EvalOptions {
        prompts: vec![options.prompt.clone()],
        models: options.model.clone().into_iter().collect(),
        repeat: 1,
        setup: options.setup.clone(),
        ..EvalOptions::default()
    };
    let mut plan = EvalPlan::new(&eval)?;
    if let Some(edited) = &options.edited {
        // The front end's text (unsaved edits) is the prompt as it is: the baseline and every edit's start.
        for column in &mut plan.columns {
            column.setup.prompt.system.clone_from(&edited.system);
            column.setup.prompt.template.clone_from(&edited.template);
        }
        evaluate::renders(&plan, edited).map_err(|why| {
            OptimizeError::Input(format!("{}: the prompt as edited: {why}", options.prompt.display()))
        })?;
    }
    if plan.columns.len() != 1 || plan.prompts.len() != 1 {
        return Err(OptimizeError::Input(format!(
            "{}: optimize takes one prompt file (not a promptfoo config or a suite)",
            options.prompt.display()
        )));
    }
    let cases: Vec<String> = plan.rows.iter().flatten().cloned().collect();
    let last = plan.baseline("last", options.evals_dir.as_deref()).ok();
    let verdicts: Option<(String, HashMap<String, bool>)> = last.map(|record| {
        let mut passed: HashMap<String, bool> = HashMap::new();
        for cell in &record.cells {
            if let Some(case) = &cell.case {
                let entry = passed.entry(case.clone()).or_insert(true);
                *entry = *entry && cell.score.verdict == Verdict::Pass;
            }
        }
        (record.id.clone(), passed)
    });
    let split = split::split(&cases, verdicts.as_ref().map(|(id, v)| (id.as_str(), v)), options.held_out, options.seed)
        .map_err(|why| OptimizeError::Input(format!("{}: {why}", options.prompt.display())))?;
    if options.budget < cases.len() {
        return Err(OptimizeError::Input(format!(
            "--budget {}: the baseline alone scores {} cells ({} train + {} held-out)",
            options.budget,
            cases.len(),
            split.train.len(),
            split.held_out.len()
        )));
    }
    let column = plan.columns.first().map(|c| (c.column.clone(), c.setup.clone()));
    let Some((column, setup)) = column else { return Err(OptimizeError::Input("no column to run".into())) };
    let proposer_model = match options.max_proposals {
        0 => None,
        _ => {
            let mut model = match &options.proposer {
                Some(text) => ProposerModel::parse(text).map_err(OptimizeError::Input)?,
                None => ProposerModel {
                    provider: setup.settings.provider,
                    model: Some(setup.settings.model.clone()).filter(|m| !m.is_empty()),
                    base_url: None,
                    key_env: setup.key_env.clone(),
                },
            };
            match &options.proposer_base_url {
                // Its own server: only the key named for it goes there (or the provider's default
                // variable), never the prompt's.
                Some(url) => {
                    model.base_url = Some(url.clone());
                    model.key_env.clone_from(&options.proposer_key_env);
                }
                // The prompt's own server, with the prompt's key (the same origin).
                None if model.provider == setup.settings.provider => {
                    model.base_url.clone_from(&setup.settings.base_url);
                    model.key_env = options.proposer_key_env.clone().or(model.key_env).or(setup.key_env.clone());
                }
                None => model.key_env.clone_from(&options.proposer_key_env),
            }
            Some(model)
        }
    };
    // The one rule of every job: the default model is fetched when a run of it needs it.
    let mut runs = vec![(setup.settings.provider, setup.settings.model.as_str())];
    runs.extend(proposer_model.as_ref().map(|m| (m.provider, m.model.as_deref().unwrap_or_default())));
    let mut sink = sink;
    if options.fetch_model && crate::run::needs_default_model(runs) {
        crate::run::fetch_default_model(&mut |p| sink(OptimizeEvent::Fetching(p)), true)
            .map_err(OptimizeError::Input)?;
    }
    let proposer = match proposer_model {
        Some(model) => Some(Proposer::new(model, setup.cache, setup.cache_dir.clone()).map_err(OptimizeError::Input)?),
        None => None,
    };
    let original = Edit { system: setup.prompt.system.clone(), template: setup.prompt.template.clone() };
    let concurrency = plan.concurrency(options.concurrency);
    let mut session = Session {
        options,
        plan,
        split,
        original: original.clone(),
        entries: Vec::new(),
        cost: Cost::default(),
        budget: Budget { cells: options.budget, max_proposals: options.max_proposals, ..Budget::default() },
        calls: Vec::new(),
        concurrency,
        cancel: cancel.boxed().shared(),
        cancelled: false,
        spent: HashMap::new(),
        stopped: None,
        sink,
    };
    (session.sink)(OptimizeEvent::Split {
        train: session.split.train.len(),
        held_out: session.split.held_out.len(),
        held_out_cases: session.split.held_out.clone(),
    });
    session.add("baseline", "the prompt as it is".into(), None, original).await?;
    session.mutations().await?;
    if let Some(proposer) = &proposer {
        session.proposals(proposer).await?;
    }
    let best = session.held_out().await?;
    (session.sink)(OptimizeEvent::Done { cancelled: session.cancelled });
    let mut spent = std::mem::take(&mut session.spent);
    let mut entries = session.entries.into_iter().map(|e| e.candidate).map(|mut candidate| {
        candidate.cost = spent.remove(&candidate.id).unwrap_or_default();
        candidate
    });
    let baseline = entries.next().unwrap_or_default();
    Ok(Optimization {
        optimization: FORMAT,
        id: crate::eval::store::new_id(started_at_ms),
        started_at_ms,
        duration_ms: started.elapsed().as_millis() as u64,
        prompt: session.plan.prompts.first().cloned().ok_or_else(|| OptimizeError::Input("no prompt".into()))?,
        model: column.model_and_mode(),
        proposer: proposer.map(|p| p.model.shown()),
        split: session.split,
        baseline,
        candidates: entries.collect(),
        best,
        proposer_calls: session.calls,
        cost: session.cost,
        budget: session.budget,
        cancelled: session.cancelled,
        stopped: session.stopped,
    })
}

impl<F: FnMut(OptimizeEvent) + Send> Session<'_, F> {
    /// Whether the loop should stop: cancelled, or the budget cannot run `cells` more and still
    /// leave the held-out runs of the baseline and one candidate.
    fn must_stop(&mut self, cells: usize) -> bool {
        if self.cancelled || self.cancel.clone().now_or_never().is_some() {
            self.cancelled = true;
            self.stopped = Some("cancelled".into());
            return true;
        }
        let reserve = 2 * self.split.held_out.len();
        if self.budget.cells_scored + cells + reserve > self.budget.cells {
            self.stopped.get_or_insert_with(|| format!("the budget of {} cells", self.budget.cells));
            return true;
        }
        false
    }

    /// The next candidate's id.
    fn next_id(&self) -> String {
        format!("c{}", self.entries.len())
    }

    /// Adds a candidate: rejected when it repeats one or does not render, else run on the train cases.
    async fn add(
        &mut self,
        origin: &str,
        rationale: String,
        parent: Option<String>,
        edit: Edit,
    ) -> Result<(), OptimizeError> {
        let id = if self.entries.is_empty() { "baseline".to_string() } else { self.next_id() };
        let diff = super::diff::edit_diff(
            (self.original.system.as_deref(), &self.original.template),
            (edit.system.as_deref(), &edit.template),
        );
        let mut candidate = Candidate {
            id: id.clone(),
            origin: origin.into(),
            parent,
            rationale,
            system: edit.system.clone(),
            template: edit.template.clone(),
            diff,
            ..Candidate::default()
        };
        let duplicate = self.entries.iter().find(|e| e.edit == edit && e.candidate.rejected.is_none());
        let rejected = match duplicate {
            Some(earlier) => Some(format!("a duplicate of {}", earlier.candidate.id)),
            None => evaluate::renders(&self.plan, &edit).err(),
        };
        if let Some(reason) = rejected {
            (self.sink)(OptimizeEvent::Rejected { candidate: id, reason: reason.clone() });
            candidate.rejected = Some(reason);
            self.entries.push(Entry { candidate, edit, train: Vec::new() });
            return Ok(());
        }
        let train = self.split.train.clone();
        let outcome = self.evaluate(&id, &edit, &train, false).await?;
        candidate.train = Some(evaluate::figures(&outcome.iter().map(|s| &s.result).collect::<Vec<_>>()));
        candidate.cases = outcome.iter().map(|s| s.result.clone()).collect();
        self.entries.push(Entry { candidate, edit, train: outcome });
        Ok(())
    }

    /// Runs `edit` on `cases`, counting the cells and their cost; notes a cancel.
    async fn evaluate(
        &mut self,
        id: &str,
        edit: &Edit,
        cases: &[String],
        held_out: bool,
    ) -> Result<Vec<Scored>, OptimizeError> {
        (self.sink)(OptimizeEvent::Evaluating { candidate: id.into(), held_out, cells: cases.len() });
        let plan = evaluate::plan_for(&self.plan, edit, cases);
        let outcome = evaluate::evaluate(&plan, held_out, self.concurrency, self.cancel.clone()).await?;
        self.budget.cells_scored += outcome.cases.len();
        add_cost(&mut self.cost.candidates, &outcome.cost);
        add_cost(self.spent.entry(id.to_string()).or_default(), &outcome.cost);
        (self.sink)(OptimizeEvent::Spent {
            candidate: id.into(),
            cells: outcome.cases.len(),
            cost: outcome.cost.clone(),
            cells_scored: self.budget.cells_scored,
            budget: self.budget.cells,
            total: self.cost.clone(),
        });
        if outcome.cancelled {
            self.cancelled = true;
            self.stopped = Some("cancelled".into());
        }
        let figures = evaluate::figures(&outcome.cases.iter().map(|s| &s.result).collect::<Vec<_>>());
        (self.sink)(OptimizeEvent::Scored { candidate: id.into(), held_out, figures });
        Ok(outcome.cases)
    }

    /// Demonstrations from the baseline's passing train cases, then ablations of its system prompt.
    async fn mutations(&mut self) -> Result<(), OptimizeError> {
        let passing: Vec<Demo> = self
            .entries
            .first()
            .map(|baseline| {
                baseline
                    .train
                    .iter()
                    .filter(|s| s.result.verdict == Verdict::Pass)
                    .map(|s| Demo {
                        case: s.result.case.clone(),
                        variables: self.case_variables(&s.result.case),
                        answer: s.answer.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut edits: Vec<(&str, Edit, String)> = Vec::new();
        for (edit, why) in mutate::demo_edits(&self.original, &passing, self.options.demos, self.options.seed) {
            edits.push(("demos", edit, why));
        }
        if self.options.ablation {
            for (edit, why) in mutate::ablation_edits(&self.original) {
                edits.push(("ablation", edit, why));
            }
        }
        (self.sink)(OptimizeEvent::Planned { candidates: edits.len() + self.options.max_proposals });
        for (origin, edit, why) in edits {
            if self.must_stop(self.split.train.len()) {
                break;
            }
            self.add(origin, why, Some("baseline".into()), edit).await?;
        }
        Ok(())
    }

    /// A case's own variables (what a demonstration shows as its input).
    fn case_variables(&self, case: &str) -> crate::prompt::template::Variables {
        let row = self.plan.rows.iter().position(|row| row.as_deref() == Some(case));
        let column = self.plan.columns.first();
        let found = row.zip(column).and_then(|(row, column)| column.case(row).ok().flatten());
        found.map(|c| c.variables).unwrap_or_default()
    }

    /// The candidate run on the train cases with the best mean score (the baseline on a tie).
    fn parent(&self) -> usize {
        let mut best = 0;
        for (i, entry) in self.entries.iter().enumerate() {
            let (Some(mine), Some(theirs)) =
                (entry.candidate.train, self.entries.get(best).and_then(|e| e.candidate.train))
            else {
                continue;
            };
            if mine.mean_score > theirs.mean_score {
                best = i;
            }
        }
        best
    }

    /// Up to `--max-proposals` edits asked of the proposer, each of the best candidate so far.
    async fn proposals(&mut self, proposer: &Proposer) -> Result<(), OptimizeError> {
        for _ in 0..self.options.max_proposals {
            if self.must_stop(self.split.train.len()) {
                return Ok(());
            }
            let parent = self.parent();
            let Some(entry) = self.entries.get(parent) else { return Ok(()) };
            let (parent_id, parent_edit) = (entry.candidate.id.clone(), entry.edit.clone());
            let mut failed: Vec<&Scored> = entry.train.iter().filter(|s| s.result.verdict != Verdict::Pass).collect();
            super::seeded::Seeded::new(self.options.seed.wrapping_add(self.entries.len() as u64)).shuffle(&mut failed);
            failed.truncate(3);
            let variables: Vec<_> = failed.iter().map(|s| self.case_variables(&s.result.case)).collect();
            let tried: Vec<Tried<'_>> = self.entries.iter().skip(1).map(tried_of).collect();
            let schema = self.schema();
            let context = propose::context(
                parent_edit.system.as_deref(),
                &parent_edit.template,
                schema.as_ref(),
                &failed,
                &variables,
                &tried,
            );
            let id = self.next_id();
            (self.sink)(OptimizeEvent::Proposing { candidate: id.clone() });
            let Some((proposal, mut call)) = proposer.propose(&context, self.cancel.clone()).await else {
                self.cancelled = true;
                self.stopped = Some("cancelled".into());
                return Ok(());
            };
            self.budget.proposals += 1;
            call.candidate.clone_from(&id);
            self.cost.proposer.calls += 1;
            self.cost.proposer.cached += usize::from(call.cached);
            self.cost.proposer.tokens_in += call.tokens_in;
            self.cost.proposer.tokens_out += call.tokens_out;
            self.calls.push(call);
            (self.sink)(OptimizeEvent::Spent {
                candidate: id.clone(),
                cells: 0,
                cost: RoleCost::default(),
                cells_scored: self.budget.cells_scored,
                budget: self.budget.cells,
                total: self.cost.clone(),
            });
            match proposal {
                Proposal::Malformed(reason) => {
                    self.reject(&id, "proposal", String::new(), Some(parent_id), &parent_edit, reason)
                }
                Proposal::Edit { rationale, system, template } => {
                    let edit = Edit {
                        system: system.or_else(|| parent_edit.system.clone()),
                        template: template.unwrap_or_else(|| parent_edit.template.clone()),
                    };
                    if edit == parent_edit {
                        let reason =
                            format!("the proposal changes neither the system prompt nor the template of {parent_id}");
                        self.reject(&id, "proposal", rationale, Some(parent_id), &edit, reason);
                    } else {
                        self.add("proposal", rationale, Some(parent_id), edit).await?;
                    }
                }
            }
        }
        self.stopped.get_or_insert_with(|| format!("the {} proposals allowed", self.options.max_proposals));
        Ok(())
    }

    /// Records candidate `id` as rejected for `reason` without running it.
    fn reject(
        &mut self,
        id: &str,
        origin: &str,
        rationale: String,
        parent: Option<String>,
        edit: &Edit,
        reason: String,
    ) {
        (self.sink)(OptimizeEvent::Rejected { candidate: id.into(), reason: reason.clone() });
        let candidate = Candidate {
            id: id.into(),
            origin: origin.into(),
            parent,
            rationale,
            system: edit.system.clone(),
            template: edit.template.clone(),
            rejected: Some(reason),
            ..Candidate::default()
        };
        self.entries.push(Entry { candidate, edit: edit.clone(), train: Vec::new() });
    }

    /// The prompt's schema, for the proposer.
    fn schema(&self) -> Option<serde_json::Value> {
        let setup = &self.plan.columns.first()?.setup;
        setup.prompt.resolve_schema(&setup.base_dir).ok().flatten().map(|s| s.schema)
    }

    /// The Pareto front on train, its members and the baseline run on the held-out cases (best train
    /// first, then with `rank_all` the others, as the budget allows), each compared with the baseline; the best id.
    async fn held_out(&mut self) -> Result<Option<String>, OptimizeError> {
        if self.cancelled {
            return Ok(None);
        }
        let train = self.split.train.clone();
        let run: Vec<usize> = (0..self.entries.len())
            .filter(|&i| {
                self.entries.get(i).is_some_and(|e| e.candidate.rejected.is_none() && e.train.len() == train.len())
            })
            .collect();
        let scores: Vec<Vec<f64>> = run.iter().map(|&i| self.scores(i, &train, false)).collect();
        let front: Vec<usize> = select::pareto_front(&scores).into_iter().filter_map(|k| run.get(k).copied()).collect();
        for &i in &front {
            if let Some(entry) = self.entries.get_mut(i) {
                entry.candidate.on_front = true;
            }
        }
        let rest: Vec<usize> = match self.options.rank_all {
            true => run.iter().copied().filter(|i| *i != 0 && !front.contains(i)).collect(),
            false => Vec::new(),
        };
        let mean = |s: &Self, i: usize| s.entries.get(i).and_then(|e| e.candidate.train).map_or(0.0, |f| f.mean_score);
        let by_train = |s: &Self, mut ids: Vec<usize>| {
            ids.sort_by(|&a, &b| mean(s, b).total_cmp(&mean(s, a)).then(a.cmp(&b)));
            ids
        };
        let front = by_train(self, front.into_iter().filter(|&i| i != 0).collect());
        let rest = by_train(self, rest);
        let order: Vec<usize> = std::iter::once(0).chain(front).chain(rest).collect();
        let held = self.split.held_out.clone();
        for i in order {
            if self.cancelled || self.budget.cells_scored + held.len() > self.budget.cells {
                self.stopped.get_or_insert_with(|| format!("the budget of {} cells", self.budget.cells));
                break;
            }
            let Some(entry) = self.entries.get(i) else { continue };
            let (id, edit) = (entry.candidate.id.clone(), entry.edit.clone());
            let outcome = self.evaluate(&id, &edit, &held, true).await?;
            if self.cancelled {
                break;
            }
            if let Some(entry) = self.entries.get_mut(i) {
                entry.candidate.held_out =
                    Some(evaluate::figures(&outcome.iter().map(|s| &s.result).collect::<Vec<_>>()));
                entry.candidate.cases.extend(outcome.into_iter().map(|s| s.result));
            }
        }
        let baseline = self.scores(0, &held, true);
        let seed = self.options.seed;
        let mut ranked = Vec::new();
        for i in 0..self.entries.len() {
            let scores = self.scores(i, &held, true);
            let Some(entry) = self.entries.get_mut(i) else { continue };
            let Some(figures) = entry.candidate.held_out else { continue };
            if i > 0 {
                entry.candidate.versus_baseline = Some(stats::paired(&baseline, &scores, seed));
            }
            ranked.push((i, figures));
        }
        let best = select::rank(ranked).first().and_then(|&i| self.entries.get(i)).map(|e| e.candidate.id.clone());
        Ok(best)
    }

    /// Candidate `i`'s scores on `cases` in their order (0 where it has none).
    fn scores(&self, i: usize, cases: &[String], held_out: bool) -> Vec<f64> {
        let Some(entry) = self.entries.get(i) else { return vec![0.0; cases.len()] };
        cases
            .iter()
            .map(|case| {
                entry
                    .candidate
                    .cases
                    .iter()
                    .find(|c| c.case == *case && c.held_out == held_out)
                    .map_or(0.0, |c| c.score)
            })
            .collect()
    }
}

/// An earlier candidate as the proposer reads it.
fn tried_of(entry: &Entry) -> Tried<'_> {
    let outcome = match (&entry.candidate.rejected, entry.candidate.train) {
        (Some(reason), _) => format!("rejected: {reason}"),
        (None, Some(f)) => format!("train: pass rate {:.2}, mean score {:.2}", f.pass_rate, f.mean_score),
        (None, None) => "not run".into(),
    };
    Tried { id: &entry.candidate.id, rationale: &entry.candidate.rationale, outcome }
}

fn add_cost(total: &mut RoleCost, more: &RoleCost) {
    total.calls += more.calls;
    total.cached += more.cached;
    total.tokens_in += more.tokens_in;
    total.tokens_out += more.tokens_out;
}

/// A finished optimization and where it was kept.
#[derive(Debug)]
pub struct Kept {
    pub record: Optimization,
    /// The record's file, or why it was not saved.
    pub saved: Result<std::path::PathBuf, String>,
}

/// [`run`], the record then saved in the optimizations folder `store` (`None`: the data directory's;
/// the workbench without a data directory passes its reason as `Err`).
pub async fn run_and_keep<F, C>(
    options: &OptimizeOptions,
    store: Result<Option<std::path::PathBuf>, String>,
    sink: F,
    cancel: C,
) -> Result<Kept, OptimizeError>
where
    F: FnMut(OptimizeEvent) + Send,
    C: std::future::Future<Output = Stop> + Send + 'static,
{
    let record = run(options, sink, cancel).await?;
    let dir = store.and_then(|dir| match dir {
        Some(dir) => Ok(dir),
        None => super::store::optimizations_dir().map_err(|e| e.to_string()),
    });
    let saved = dir.and_then(|dir| super::store::save_in(&dir, &record).map_err(|e| e.to_string()));
    Ok(Kept { record, saved })
}
