"""A persona's offers (``knowledge.offers``, docs/consult.md): which knowledge tables hold what
the shop sells, what their fields mean, and the shop's rules a quote follows.

The rows stay in the knowledge files (what the robot may say of an offer is what the shop
wrote); this says how to reason about them. A field of a row means what its name says
(``price_adult``, ``duration``, ...): ``fields`` maps the roles to a table's own column names
when they differ."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from config.strict import Strict

# What a field of an offer's row can mean. Prices are read with their currency from the value
# ("9,800 yen", "5 pounds", "€45"); times from clock times in the text ("at 8:30 or 13:30").
OfferRole = Literal[
    "price_adult", "price_child", "price_person", "price_group", "group_size", "room", "single_supplement",
    "duration", "starts", "days", "places", "tags", "step_free", "meal", "diets", "min_age", "free",
    "child_ages", "free_under", "price_family", "family_party"]
ROLES: tuple[str, ...] = OfferRole.__args__  # type: ignore[attr-defined]


class GroupDiscount(Strict):
    """A discount off every offer for a party of ``people`` or more (a shop's group rate)."""

    people: int = Field(ge=2, le=1000, description="The smallest party that gets it.")
    percent: float = Field(gt=0, le=100, description="Off every offer's total, rounded to the currency's unit.")


class ConsultLines(Strict):
    """What the robot says when it consults, in the persona's words. Placeholders are filled by
    the recommender and the quote: every offer, number and name in them comes from the files."""

    recommend: str = Field("The {offer} fits {fit}: {facts}.", min_length=1, description=(
        "A recommendation: {offer} its name, {fit} why, in the visitor's terms (\"a family\", \"your budget\"), "
        "{facts} its duration and prices."))
    total: str = Field("That is {total} for {party}.", min_length=1, description=(
        "The party's total for an offer: {total} (\"16,200 yen\"), {party} (\"the three of you\")."))
    also: str = Field("The {offer} would fit too: {facts}.", min_length=1, description="A second recommendation.")
    nothing: str = Field("I'm afraid no {noun} fits {wish}.", min_length=1, description=(
        "Nothing meets every wish: {wish} is the one that rules them out (\"within 20,000 yen for three\")."))
    nearest: str = Field("The nearest is the {offer}: {facts}.", min_length=1, description=(
        "Said after `nothing`: the offer that breaks the fewest wishes, and what it costs."))
    planned: str = Field("I have added the {offer} to your plan.", min_length=1, description=(
        "The visitor chose an offer: it is in the plan now."))
    unfit: str = Field("Please note that it does not fit {wish}.", min_length=1, description=(
        "Said after `planned` when the offer chosen breaks a wish of the visitor's profile ({wish}: the first "
        "it breaks, as `nothing` says it): the choice is the visitor's, and the sheet carries it for staff."))
    dropped: str = Field("I have taken the {offer} out of your plan.", min_length=1, description=(
        "The visitor dropped an offer from the plan."))
    plan: str = Field("Your plan: {plan}.", min_length=1, description=(
        "The plan said back (in a recap and after each change): {plan} is its offers and the total."))
    handover: str = Field("I will call a member of our staff, who will book it with you.", min_length=1,
                          description="A visitor who wants to book or pay: staff get the consultation sheet.")
    ask_party: str | None = Field("How many of you are going, and are there children?", description=(
        "Asked before a recommendation when the party is not known (null: recommend per person)."))
    suggest: str | None = Field("Shall I suggest a {noun} that fits?", description=(
        "Said after a recap asked for before anything is recommended or planned, once the visitor has told "
        "what they want ({noun}: the offers' `noun`); a yes on the next turn asks for the recommendation, any "
        "other turn lets it lapse (null: no such offer)."))


class PersonaOffers(Strict):
    """What the shop sells, for recommendations, exact quotes and the visitor's plan."""

    tables: list[Path] = Field(min_length=1, description=(
        "Knowledge files (of `knowledge.files`, relative to the persona) whose rows are offers."))
    noun: str = Field("offer", min_length=1, max_length=30, description=(
        "What one offer is called when the robot says none fits (\"tour\", \"activity\")."))
    fields: dict[OfferRole, str] = Field({}, description=(
        "A role -> the table's column for it, where the names differ (price_adult: adult_fare); a role not "
        "named here is the column of its own name. Roles: price_adult, price_child, price_person, price_group "
        "(with group_size), room (with single_supplement), duration, starts, days, places, tags, step_free, "
        "meal, diets, min_age, free."))
    admission: str | None = Field(None, min_length=1, description=(
        "The name of a knowledge row (an entry ticket) added to every offer's quote for each of the party: "
        "its price_adult, price_child (child_ages), free_under and the family ticket (price_family for "
        "family_party) when that is cheaper. null: offers are priced alone."))
    child_ages: str | None = Field(None, pattern=r"^\d{1,2} to \d{1,2}$", description=(
        "Who pays the child price (\"6 to 11\"), where the rows do not say; older children pay as adults."))
    free_under: int | None = Field(None, ge=1, le=18, description="Children under this age go free on every offer.")
    group_discount: GroupDiscount | None = Field(None, description="A discount for a large party on every offer.")
    closed: list[str] = Field([], description="Days no offer runs (\"December 31\"), as the files say them.")
    step_free_needs: list[str] = Field(["wheelchair", "no stairs", "limited walking", "stroller"], description=(
        "Values of the profile's need slot that only a step_free offer meets."))
    food_needs: list[str] = Field(["vegetarian", "vegan", "halal", "kosher", "gluten-free"], description=(
        "Values of the profile's need slot that an offer with a meal must name in its diets."))
    lines: ConsultLines = Field(ConsultLines(), description="What the robot says when it consults.")

    @field_validator("closed")
    @classmethod
    def _closed_are_days(cls, value: list[str]) -> list[str]:
        if any(not v.strip() for v in value):
            raise ValueError("a closed day must be a date as the files say it (\"December 31\")")
        return value
