"""Posting-time experiments: arms of posting slots, their posts drawn at random, their lifts."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import AnalyticsRead, AsOf, AutomationsWrite, IdPath
from api.pagination import PageParams
from api.routing import MurmurRoute
from api.schemas import Envelope, ok
from domain.experiments import service
from domain.experiments.schemas import (
    Experiment,
    ExperimentCreate,
    ExperimentDetail,
    ExperimentStop,
)
from domain.schemas import Page

router = APIRouter(tags=["Experiments"], route_class=MurmurRoute)


@router.get("/experiments", response_model=Envelope[Page[Experiment]])
def list_experiments(ctx: AnalyticsRead, page: PageParams) -> Envelope[Page[Experiment]]:
    """List the workspace's posting-time experiments, newest first."""
    return ok(service.list_experiments(ctx.tx, ctx.workspace_id, page))


@router.post("/experiments", response_model=Envelope[Experiment], status_code=201)
def create_experiment(ctx: AutomationsWrite, body: ExperimentCreate) -> Envelope[Experiment]:
    """Start a posting-time experiment: its accounts' new posts are assigned an arm at random."""
    return ok(service.create_experiment(ctx.tx, ctx.workspace_id, body))


@router.get("/experiments/{experiment_id}", response_model=Envelope[ExperimentDetail])
def get_experiment(
    ctx: AnalyticsRead, as_of: AsOf, experiment_id: IdPath
) -> Envelope[ExperimentDetail]:
    """Get an experiment with, per arm, its posts, metric and lift against the control."""
    return ok(service.get_experiment(ctx.txn, ctx.workspace_id, experiment_id))


@router.post("/experiments/{experiment_id}/stop", response_model=Envelope[ExperimentDetail])
def stop_experiment(
    ctx: AutomationsWrite, experiment_id: IdPath, body: ExperimentStop
) -> Envelope[ExperimentDetail]:
    """Stop a running experiment early, as its stop rule allows, or abandon it."""
    return ok(service.stop_experiment(ctx.txn, ctx.workspace_id, experiment_id, body))
