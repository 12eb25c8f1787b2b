"""The one reading of a question: text -> an immutable QueryFrame (understanding/frame.py), used by
Understand, Retrieve, AssessPatient and Ask alike; nothing downstream reads the text again.

Order, on one tokenization of the question:
  1. drug names (the catalog), then the question's situation (an ingestion that has happened, a reaction now,
     intent to harm: understanding/situation.py), before anything else is decided;
  2. scope guard (non-human subjects), section cue on the question with the drug names masked (so a name
     containing a section word cannot select one), patient facts and groups, asked terms (words and phrases,
     with synonyms) and the effect of a "does X cause Y" question;
  3. the turn type, and what the conversation's earlier turn supplies (`Prior`): a follow-up without a drug
     keeps the earlier drug ("còn liều cho trẻ em thì sao?"); a new drug with a follow-up word and no section
     keeps the earlier section ("còn zentavir thì sao?"); the fourth clarification in a row abstains.
A caller's structured request (Retrieve's drug_id and section_key, AssessPatient's patient facts) is applied
to the reading with `for_drug` / `for_patient`, never by reading the text again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rag_server.domain import Reason
from rag_server.text.match import Phrase, Phrases, Tok, expand, find_any, tokenize, union, word_accents, words
from rag_server.text.normalize import canonical
from rag_server.text.words import read_words
from rag_server.understanding.catalog import Catalog, MatchStage, Mention
from rag_server.understanding.frame import (
    AskedTerm,
    Carried,
    PatientFacts,
    Prior,
    QueryFrame,
    Reading,
    SectionCue,
    Situation,
    TurnType,
)
from rag_server.understanding.indication import extract_indication
from rag_server.understanding.lexicon import drug_like_words
from rag_server.understanding.medications import MedicationName, read_medications
from rag_server.understanding.patient import extract_patient, with_groups
from rag_server.understanding.scope import looks_non_human, medical_terms, only_generic
from rag_server.understanding.situation import recognise
from rag_server.understanding.terms import asked_terms, effect_of
from rag_server.vocabulary.language import Language
from rag_server.vocabulary.rules import Rules
from rag_server.vocabulary.sections import PhraseMatch

MAX_QUESTION_TOKENS = 480  # words and marks read of a question (2,000 characters of prose is ~400 words)
MAX_UNKNOWN_NAMES = 2  # more unknown Latin words than this is prose in another language, not drug names
MAX_ECHO_CHARS = 40  # a word echoed back in a decision message is cut to this
MAX_CLARIFIES = 3  # the fourth consecutive clarification abstains instead
CHILD_YEARS = 16  # a stated age below this is a child's (a situation's part `child`)
_DRUG = "zzdrugzz"  # stands for a drug name while sections and terms are read


NO_PRIOR = Prior()


def read(query: str, catalog: Catalog | None, language: Language, prior: Prior = NO_PRIOR) -> Reading:
    """The reading of `query` (see the module doc)."""
    rules = language.rules
    toks = tokenize(query)[:MAX_QUESTION_TOKENS]
    mentions = _with_offsets(toks, catalog.find(toks) if catalog is not None else [])
    patient = extract_patient(toks, mentions, rules, language.medicine_words)
    masked = _masked(toks, mentions)
    spoken = word_accents(_expanded(masked, rules))  # chat abbreviations read as words
    age = patient.facts.age_in_years
    # a drug named by its first letters only is no drug to the situation ("my baby" is no brand "Baby…")
    named = [m for m in mentions if m.stage != MatchStage.PREFIX]
    situation = recognise(
        word_accents(_expanded(_masked(toks, named), rules)),
        query,
        language.situations,
        age is not None and age < CHILD_YEARS,
        {m_start for m_start, _ in _char_spans(toks, named)},
    )
    if looks_non_human(toks, rules):
        return Reading(
            QueryFrame(TurnType.OUT_OF_SCOPE, query=query, situation=situation), Reason.OUT_OF_SCOPE
        )
    unnamed = [t for t in spoken if t.raw != _DRUG]  # the words section cues are read on
    section = language.vocabulary.resolve_section(unnamed)
    if any(m.stage == MatchStage.PREFIX for m in mentions) and not (
        section is not None
        or _bare_name(masked, rules)
        or medical_terms(toks, language)
        or not patient.facts.empty
        or find_any(masked, rules.medicine_use)
    ):
        # A prefix ("drop" of a brand "Droplie") names a drug only in a question about medicine.
        mentions = [m for m in mentions if m.stage != MatchStage.PREFIX]
        masked = _masked(toks, mentions)
        patient = extract_patient(toks, mentions, rules, language.medicine_words)
    facts = patient.facts
    section = _yield_to_condition(section, unnamed, toks, patient.fact_spans, language)
    if section is not None and section.weak and ((not mentions and not prior.drug_ids) or not facts.empty):
        # a weak cue ("hằng ngày") neither asks for a drug nor outweighs patient facts; in a conversation
        # about a drug it asks about that drug ("mùa hè để trong cốp ô tô có sao không")
        section = None
    section = _population_dose(section, unnamed, language)
    section = _with_second_medicine(section, toks, mentions, language)
    section = _name_identity(section, unnamed, masked, mentions, language)
    cue = _cue(section, unnamed)
    terms = _terms(query, toks, mentions, cue, language)
    drug_at = min((m.start for m in mentions), default=None)
    roles = language.vocabulary.roles
    effect = effect_of(toks, terms, language, drug_at, patient.fact_spans) if terms else None
    if cue is not None and cue.weak and (effect is not None or find_any(toks, rules.any_effect_cue)):
        cue = None  # "zentorin có làm nóng người không" asks about an effect, not about storage
    elif (
        cue is not None
        and effect is not None
        and cue.section_key in roles.yields_to_effect
        and (
            find_any(toks, rules.effect_cues)
            or find_any(toks, rules.effect_after)  # "… after each dose. Is nausea listed?"
            or _how_often(cue, effect, roles.dosage, toks)
        )
    ):
        # "liều cao có gây co giật không" asks about the seizures ("bị đào thải qua" about none)
        cue = None
    cue = _to_population(cue, facts, language)
    base = QueryFrame(
        TurnType.FREE_FORM,
        query=query,
        patient=facts,
        drug_mentions=tuple(mentions),
        section_key=cue.section_key if cue else "",
        section_cue=cue,
        asked_terms=terms,
        conditions=tuple(c.name.text for c in language.clinical.conditions_named(toks)),
        situation=situation,
        effect=effect,
        loose=any(t.loose for t in toks),
        section_prior=section_prior(unnamed, rules, language.vocabulary.roles.population),
    )
    reading = _turn(base, toks, masked, mentions, patient.current_mentions, language, catalog)
    reading = _with_medications(reading, catalog, language)
    return _present_section(follow(reading, prior, language), catalog, unnamed, language)


# ------------------------------------------------------------------------------------------ turn type
def _turn(
    frame: QueryFrame,
    toks: Sequence[Tok],
    masked: Sequence[Tok],
    mentions: Sequence[Mention],
    current: Sequence[int],
    language: Language,
    catalog: Catalog | None,
) -> Reading:
    rules = language.rules
    facts = frame.patient
    ambiguous = [m for m in mentions if m.ambiguous]
    if ambiguous:
        detail = "; ".join(
            f"'{m.text}': " + " | ".join(catalog.display_name(d) if catalog else d for d in m.drug_ids)
            for m in ambiguous
        )
        drug_ids = tuple(sorted({d for m in ambiguous for d in m.drug_ids}))
        clarify = frame.but(turn_type=TurnType.CLARIFY, drug_ids=drug_ids, missing_fields=("drug_id",))
        return Reading(clarify, Reason.AMBIGUOUS_DRUG, detail)
    current_set = set(current)
    candidates = [d for i, m in enumerate(mentions) if i not in current_set for d in m.drug_ids]
    if not candidates and current_set:  # "đang dùng X thì cần lưu ý gì": X is the drug asked about
        candidates = [d for m in mentions for d in m.drug_ids]
        # what else is taken stays ("đang uống acenocoumarol, bác sĩ cho gel miconazol")
        asked = set(candidates)
        others = tuple(m for m in facts.current_medications if m not in asked)
        facts = with_groups(replace(facts, current_medications=others), rules)
    drug_ids = tuple(dict.fromkeys(candidates))
    frame = frame.but(
        drug_ids=drug_ids,
        patient=facts,
        search_text=_search_text(frame.query, toks, mentions, drug_ids),
    )
    if not drug_ids:
        return _without_drug(frame, toks, masked, language)
    # "amlodipin có làm tăng đường huyết không, tôi bị tiểu đường": the effect first (an "effect" that is a
    # patient condition or a disease, "bị nhiễm khuẩn tiết niệu", is what the patient has, not what is asked)
    effect_toks = tokenize(frame.effect.text) if frame.effect is not None else []
    asked_at = min((toks[m.start].start for i, m in enumerate(mentions) if i not in current_set), default=0)
    # a symptom blamed on the drug ("kêu đau khớp gối, có phải tại thuốc không") is asked about even when it
    # is also a condition's name
    blamed_at = [toks[i].start for i, _ in find_any(toks, rules.effect_after)]
    asks_effect = (
        frame.effect is not None
        and frame.effect.known
        and frame.effect.start > asked_at  # what the drug asked about does, said after naming it
        and (
            (bool(blamed_at) and frame.effect.end <= blamed_at[0])
            or (
                not any(find_any(effect_toks, c.detect) for c in rules.conditions)
                and not language.clinical.conditions_named(effect_toks)
            )
        )
    )
    if _patient_turn(facts, frame.section_key, language) and not asks_effect:
        return Reading(frame.but(turn_type=TurnType.PATIENT_ASSESSMENT))
    if frame.section_key:
        return Reading(frame.but(turn_type=TurnType.SECTION_QUESTION))
    if _bare_name(masked, rules):
        return Reading(frame.but(turn_type=TurnType.DRUG_OVERVIEW))
    return Reading(frame)


def _without_drug(
    frame: QueryFrame, toks: Sequence[Tok], masked: Sequence[Tok], language: Language
) -> Reading:
    rules = language.rules
    facts = frame.patient
    if is_smalltalk(toks, rules):
        return Reading(frame.but(turn_type=TurnType.SMALLTALK), Reason.SMALLTALK)
    indication = extract_indication(masked, rules)
    if indication:
        return Reading(
            frame.but(
                turn_type=TurnType.INDICATION_LOOKUP, indication=indication, section_key="", section_cue=None
            )
        )
    unknown = drug_like_words(toks, language.known_words)
    named = (
        bool(frame.section_key)
        or not facts.empty
        or frame.effect is not None  # "zentorin có gây buồn ngủ không": what a drug does
        or _bare_name(_mask_words(toks, unknown), rules)
    )
    if unknown and len(unknown) <= MAX_UNKNOWN_NAMES and named:
        # "liều của semaglutid": a drug is named, just not one the formulary has.
        turn = TurnType.SECTION_QUESTION if frame.section_key else TurnType.FREE_FORM
        return Reading(
            frame.but(turn_type=turn, missing_fields=("drug_id",)), Reason.DRUG_NOT_FOUND, _echo(unknown)
        )
    if frame.section_key or not facts.empty:
        return Reading(
            frame.but(turn_type=TurnType.CLARIFY, missing_fields=("drug_id",)),
            Reason.MISSING_REQUIRED_FIELD,
            "tên thuốc",
        )
    if medical_terms(toks, language):
        return Reading(frame)  # a medical question naming no drug: corpus search
    if only_generic(toks, language) and any(t.folded.isalpha() for t in toks):
        # "thuốc gì", "người lớn": which drug or condition?
        clarify = frame.but(turn_type=TurnType.CLARIFY, missing_fields=("drug_id", "indication"))
        return Reading(clarify, Reason.MISSING_REQUIRED_FIELD, "tên thuốc hoặc bệnh")
    return Reading(frame.but(turn_type=TurnType.OUT_OF_SCOPE), Reason.OUT_OF_SCOPE)  # never searched


def _patient_turn(facts: PatientFacts, section_key: str, language: Language) -> bool:
    """Patient facts beyond what an explicit section word already asks for make an assessment turn."""
    if facts.empty:
        return False
    if not section_key:
        return True
    roles = language.vocabulary.roles
    if section_key == roles.pregnancy:
        return not replace(facts, pregnant=False).empty
    if section_key == roles.breastfeeding:
        return not replace(facts, breastfeeding=False).empty
    # "X dùng kèm warfarin có sao không": warfarin against X's interactions (said when not found); else an
    # explicit section word wins ("liều ... cho người suy thận")
    return section_key == roles.interaction_facet[0] and bool(facts.current_medications)


# ------------------------------------------------------------------------------------------ follow-ups
def follow(reading: Reading, prior: Prior, language: Language) -> Reading:
    """What the earlier turn supplies, then the clarify loop (see the module doc)."""
    reading = _carried(reading, prior, language)
    frame = reading.frame
    clarifying = frame.turn_type == TurnType.CLARIFY or reading.reason in (
        Reason.MISSING_REQUIRED_FIELD,
        Reason.AMBIGUOUS_DRUG,
    )
    if clarifying and prior.clarifies >= MAX_CLARIFIES:
        return Reading(frame, Reason.CLARIFY_LOOP_EXHAUSTED)
    return reading


def _allergy_words(rules: Rules) -> Phrases:
    """What says an allergy ("dị ứng", "allergic to"): indexed once (text.match.union), not per question."""
    return union(*(c.detect for c in rules.conditions if c.flag == "allergy"))


def _after_connector(
    toks: Sequence[Tok], names: Sequence[str], rules: Rules, connectors: Sequence[Phrase] = ()
) -> bool:
    """Every one of `names` comes right after (at most two words after) a second-medicine word (or one of
    `connectors`), or right before one ("mua thêm diclofenac uống chung")."""
    found = find_any(toks, connectors or rules.second_medicine)
    ends = {start + len(p) for start, p in found}
    starts = {start for start, _ in found}
    words = [i for i, t in enumerate(toks) if not t.is_punct]
    at = {t.raw: i for i, t in enumerate(toks)}
    if not names or any(n not in at for n in names):
        return False
    for name in names:
        before = [i for i in words if i < at[name]][-3:]
        after = [i for i in words if i > at[name]][:1]
        if not any(e in ends for e in (*before, at[name])) and not any(i in starts for i in after):
            return False
    return True


def _presented_as_medicine(toks: Sequence[Tok], names: Sequence[str], rules: Rules) -> bool:
    """Some of `names` comes right after a word that presents it as a medicine ("bác sĩ cho clarithromycin",
    "uống thêm X", rules.toml names_a_medicine)."""
    medicine_words = union(
        rules.names_a_medicine, rules.medicine_use, rules.second_medicine, rules.current_medication_triggers
    )
    return any(_after_connector(toks, [n], rules, medicine_words) for n in names)


def _carried(reading: Reading, prior: Prior, language: Language) -> Reading:
    rules = language.rules
    frame = reading.frame
    if not prior.drug_ids:
        return reading
    toks = tokenize(frame.query)
    followup = bool(find_any(toks, rules.followup))
    needs_drug = reading.reason == Reason.MISSING_REQUIRED_FIELD and "drug_id" in frame.missing_fields
    plain_corpus = (
        not reading.reason and frame.turn_type == TurnType.FREE_FORM and not frame.drug_ids and followup
    )
    # In a conversation about a drug, a question without a medical word is about that drug ("lọ mở rồi để
    # nhiệt độ phòng được không?"): it is searched in the drug's text, and abstains when nothing there
    # carries what it asks (text that is not language never reaches here: read() refused it).
    implicit = frame.turn_type == TurnType.OUT_OF_SCOPE and not frame.drug_ids
    unknown = drug_like_words(toks, language.known_words) if plain_corpus or implicit else []
    if unknown and len(unknown) <= MAX_UNKNOWN_NAMES and _only_names(toks, unknown, rules):
        # "còn semaglutid thì sao": another drug asked about, one the formulary does not have
        missing = frame.but(turn_type=TurnType.FREE_FORM, missing_fields=("drug_id",))
        return Reading(missing, Reason.DRUG_NOT_FOUND, _echo(unknown))
    # "đang uống propranolol thì (thuốc này) có còn tác dụng": the unknown name is a medicine the patient
    # takes, the drug asked about is the conversation's
    taking = {canonical(m) for m in frame.patient.current_medications}
    with_unknown_medicine = (
        reading.reason == Reason.DRUG_NOT_FOUND
        and not frame.drug_ids
        and bool(taking)
        and all(canonical(n) in taking for n in reading.detail.split(", "))
    )
    # "mà em bị dị ứng Bactrim, vậy uống thuốc đó được không?": the unknown name is what the patient is
    # allergic to, the drug asked about is the conversation's
    allergic_to = (
        reading.reason == Reason.DRUG_NOT_FOUND
        and not frame.drug_ids
        and bool(frame.patient.allergies)
        and _after_connector(toks, reading.detail.split(", "), rules, _allergy_words(rules))
    )
    # "how slowly do I taper off this?": words the book does not know, in a question about the drug
    referring = (
        reading.reason == Reason.DRUG_NOT_FOUND
        and not frame.drug_ids
        and bool(find_any(toks, rules.reference))
    )
    # "có pha chung với natri bicarbonat được không?": the unknown name is a second medicine
    with_second_medicine = (
        reading.reason == Reason.DRUG_NOT_FOUND
        and not frame.drug_ids
        and _after_connector(toks, reading.detail.split(", "), rules)
    )
    # "trưa cabin nóng hầm hập, có nên để hộp thuốc trên xe không": a word the book does not know, not
    # presented as a medicine, in a section question about the conversation's drug
    stray_word = (
        reading.reason == Reason.DRUG_NOT_FOUND
        and not frame.drug_ids
        and bool(frame.section_key)
        and not _presented_as_medicine(toks, reading.detail.split(", "), rules)
    )
    if (
        needs_drug
        or stray_word
        or plain_corpus
        or implicit
        or with_unknown_medicine
        or with_second_medicine
        or allergic_to
        or referring
        or (frame.situation.emergency and not frame.drug_ids)
    ):
        turn = (
            TurnType.SECTION_QUESTION
            if frame.section_key
            else TurnType.PATIENT_ASSESSMENT
            if not frame.patient.empty
            else TurnType.FREE_FORM
        )
        carried = frame.but(
            drug_ids=prior.drug_ids,
            missing_fields=(),
            turn_type=turn,
            carried=Carried(drug_ids=prior.drug_ids),
        )
        roles = language.vocabulary.roles
        only_medicines = replace(frame.patient, current_medications=()).empty  # else assessed as a patient
        compared = bool(find_any(toks, rules.comparison))  # "so với warfarin thì thuốc này …": the drug
        if (with_unknown_medicine or with_second_medicine) and only_medicines and not compared and (
            not frame.section_key or frame.section_key in roles.with_carried_medicine
        ):
            # the medicine named is taken with the conversation's drug: how the two interact
            interaction = roles.interaction_facet[0]
            turn = TurnType.SECTION_QUESTION
            carried = carried.but(section_key=interaction, section_cue=None, turn_type=turn)
        return Reading(carried)
    keeps_section = (
        not reading.reason
        and frame.drug_ids
        and not frame.section_key
        and followup
        and prior.section_key
        and frame.turn_type in (TurnType.DRUG_OVERVIEW, TurnType.FREE_FORM)
    )
    if keeps_section:
        carried = frame.but(
            section_key=prior.section_key,
            turn_type=TurnType.SECTION_QUESTION,
            carried=Carried(section_key=prior.section_key),
        )
        return Reading(carried)
    return reading


# ------------------------------------------------------------------------------------------ structured
def for_drug(reading: Reading, drug_id: str, section_key: str = "") -> Reading:
    """A Retrieve with drug_id (and section_key): the question's reading for that drug."""
    frame = reading.frame
    key = section_key or (
        frame.section_key if frame.section_cue is not None and not frame.section_cue.weak else ""
    )
    turn = (
        TurnType.SECTION_QUESTION
        if key
        else TurnType.FREE_FORM
        if frame.query.strip()
        else TurnType.DRUG_OVERVIEW
    )
    return Reading(frame.but(turn_type=turn, drug_ids=(drug_id,), section_key=key, missing_fields=()))


def for_section(reading: Reading, section_key: str) -> Reading:
    """A Retrieve with a query and a section_key: the question's drugs, that section (a corpus search
    restricted to it when no drug is named)."""
    frame = reading.frame
    asks_a_section = frame.turn_type in (
        TurnType.SECTION_QUESTION,
        TurnType.FREE_FORM,
        TurnType.DRUG_OVERVIEW,
        TurnType.CLARIFY,
    )
    if not asks_a_section or any(m.ambiguous for m in frame.drug_mentions):
        return reading
    if frame.drug_ids:
        return Reading(frame.but(section_key=section_key, turn_type=TurnType.SECTION_QUESTION))
    return Reading(frame.but(section_key=section_key, turn_type=TurnType.FREE_FORM, missing_fields=()))


def for_patient(
    drug_ids: Sequence[str], facts: PatientFacts, catalog: Catalog | None, language: Language
) -> QueryFrame:
    """AssessPatient: the caller's drugs and patient facts (medications read as typed, groups derived)."""
    facts = with_groups(facts, language.rules)
    medications = _medications(facts, catalog, language)
    return QueryFrame(
        TurnType.PATIENT_ASSESSMENT,
        drug_ids=tuple(dict.fromkeys(drug_ids)),
        patient=facts,
        medications=medications,
    )


def conflicting_drugs(frame: QueryFrame, drug_id: str, catalog: Catalog | None) -> list[str]:
    """Drugs the question names unambiguously that are not `drug_id` (a caller's contradiction)."""
    if catalog is None:
        return []
    names = [m for m in frame.drug_mentions if not m.ambiguous and not m.weak]
    return sorted({catalog.display_name(m.drug_ids[0]) for m in names if drug_id not in m.drug_ids})


# ------------------------------------------------------------------------------------------ parts
def _with_offsets(toks: Sequence[Tok], mentions: Sequence[Mention]) -> list[Mention]:
    return [replace(m, char_start=toks[m.start].start, char_end=toks[m.end - 1].end) for m in mentions]


def _char_spans(toks: Sequence[Tok], mentions: Sequence[Mention]) -> list[tuple[int, int]]:
    return [(toks[m.start].start, toks[m.end - 1].end) for m in mentions]


def _with_second_medicine(
    section: PhraseMatch | None, toks: Sequence[Tok], mentions: Sequence[Mention], language: Language
) -> PhraseMatch | None:
    """A cue of a section that describes one drug (its pharmacokinetics, ADRs, pharmacology: roles
    with_second_medicine) asks about the interaction when the question names a second medicine: another
    drug of the formulary, or a drug class or one of its members (clinical.toml [[drug_class]]); an unknown
    word is no medicine here ("nồng độ lactat" is a lab value)."""
    roles = language.vocabulary.roles
    if section is None or section.section_key not in roles.with_second_medicine or not mentions:
        return section
    named = {d for m in mentions for d in m.drug_ids}
    inside = {i for m in mentions for i in range(m.start, m.end)}
    rest = [t for i, t in enumerate(toks) if i not in inside]
    others = len(named) > 1 or find_any(rest, language.medicine_names)
    if not others:
        return section
    return replace(section, section_key=roles.interaction_facet[0])


def _name_identity(
    section: PhraseMatch | None, toks: Sequence[Tok], masked: Sequence[Tok], mentions: Sequence[Mention],
    language: Language,
) -> PhraseMatch | None:
    """A name asked to be another ("Hiconcil, vậy là amoxicilin hả", "Panfor là thuốc gì, có phải metformin
    không", "Partamol, Hapacol với Efferalgan đều là para hết hả") asks for the brand names: a drug the book
    has, another name beside it (a drug-like word the book does not have, or a second name of the same
    drug) and a phrase of identity (rules.toml [question] name_identity). A strong cue of another section
    keeps its section, but for the class ("Panfor là thuốc gì"). `toks`: the words the section cues were
    read on (names left out), the cue's position is theirs."""
    roles = language.vocabulary.roles
    if not mentions:
        return section
    texts = {m.text.lower() for m in mentions}
    drugs = {d for m in mentions for d in m.drug_ids}
    two_names = len(texts) > 1 and len(drugs) == 1
    # "Stadovas 5 có phải amlodipin không": two names of one drug asked to be the same (never with a name
    # the book does not have: "uống X mà đang dùng digoxin có phải kiểm tra kali không")
    cue = find_any(toks, language.rules.name_identity) or (
        find_any(toks, language.rules.same_name) if two_names else []
    )
    if not cue:
        return section
    unknown = drug_like_words([t for t in masked if t.raw != _DRUG], language.known_words)
    if not unknown and not two_names:
        return section
    if section is not None and not section.weak and section.section_key != roles.drug_class:
        return section
    at, pat = cue[0]
    return PhraseMatch(roles.brands, pat.text, at, False, len(pat))


def _present_section(
    reading: Reading, catalog: Catalog | None, unnamed: Sequence[Tok], language: Language
) -> Reading:
    """A question cueing two sections, the winner of which the drug's monograph does not have ("túi truyền
    pha với glucose 5% từ thứ Hai, tới thứ Sáu còn treo được không" for a drug without an incompatibility
    section): the other cue, of a section the drug has, is what it asks. One cue only stays as it is (the
    section asked is not in the book: SECTION_NOT_FOUND)."""
    frame = reading.frame
    if reading.reason or frame.section_cue is None or frame.carried.section_key or catalog is None:
        return reading
    if len(frame.drug_ids) != 1:
        return reading
    info = catalog.drugs.get(frame.drug_ids[0])
    if info is None or frame.section_key in info.section_keys:
        return reading
    sections = language.vocabulary.sections
    present = [c for c in language.vocabulary.cues(unnamed) if c.section_key in info.section_keys]
    if not present:
        return reading
    best = max(present, key=lambda c: (sections[c.section_key].specificity, c.length, -c.position))
    cue = _cue(best, unnamed)
    return Reading(frame.but(section_key=best.section_key, section_cue=cue), reading.reason, reading.detail)


def _population_dose(
    section: PhraseMatch | None, unnamed: Sequence[Tok], language: Language
) -> PhraseMatch | None:
    """A population's cue said with a dosing cue ("liều zelvorin cho bà bầu là bao nhiêu") asks for the dose
    (roles population_yields_to); the population stays a patient fact, so a dosing section silent on it is
    said to be."""
    roles = language.vocabulary.roles
    if section is None or section.weak or section.section_key not in roles.population:
        return section
    if not find_any(unnamed, language.rules.dose_asked):
        return section  # "uống 1 liều được không" names a dose, asks none
    return next((c for c in language.vocabulary.cues(unnamed) if c.section_key in roles.population_yields_to),
                section)


def _how_often(cue: SectionCue, effect: AskedTerm, dosage: str, toks: Sequence[Tok]) -> bool:
    """A dosing cue right after a known effect, or right after a word of it said again, says how often the
    effect comes ("bị đi ngoài phân lỏng mấy lần một ngày", "có làm đi tiểu nhiều, đêm phải dậy đi tiểu mấy
    lần không"), not what is asked."""
    if not effect.known or cue.section_key != dosage:
        return False
    if 0 <= cue.start - effect.end <= 1:
        return True
    before = [t for t in toks if t.end <= cue.start and not t.is_punct][-1:]
    said = {t.folded for t in tokenize(effect.text)}
    return bool(before) and before[0].start >= effect.end and before[0].folded in said


def _yield_to_condition(
    section: PhraseMatch | None,
    spoken: Sequence[Tok],
    toks: Sequence[Tok],
    fact_spans: Sequence[tuple[int, int]],
    language: Language,
) -> PhraseMatch | None:
    """A cue of a section that yields to a patient's condition (roles yields_to_condition) found inside the
    words that state a patient fact is those words ("bệnh nhân chạy thận nhân tạo", "rối loạn chuyển hóa
    porphyrin"): the section is read again without them."""
    if section is None or section.section_key not in language.vocabulary.roles.yields_to_condition:
        return section
    chars = [(toks[i].start, toks[j - 1].end) for i, j in fact_spans if i < j <= len(toks)]

    def inside(t: Tok) -> bool:
        return any(a <= t.start and t.end <= b for a, b in chars)

    cue = spoken[section.position : section.position + max(section.length, 1)]
    span = next(((i, j) for i, j in fact_spans if cue and all(
        toks[i].start <= t.start and t.end <= toks[j - 1].end for t in cue)), None)
    if span is None:
        return section
    before = find_any(toks[max(0, span[0] - 2) : span[0]], language.rules.state_words)
    stated = any(i + len(p) == min(2, span[0]) for i, p in before)
    if span[1] - span[0] <= len(cue) and not stated:
        return section  # the words are the cue itself, not stated of the patient ("có lọc máu được không")
    return language.vocabulary.resolve_section([t for t in spoken if not inside(t)])


def _to_population(cue: SectionCue | None, facts: PatientFacts, language: Language) -> SectionCue | None:
    """A pregnant or breastfeeding patient asking whether to stop or take again (roles yields_to_population)
    asks about that section: the cue's words, that section's key."""
    roles = language.vocabulary.roles
    if cue is None or cue.section_key not in roles.yields_to_population:
        return cue
    if facts.pregnant == facts.breastfeeding:
        return cue
    return replace(cue, section_key=roles.pregnancy if facts.pregnant else roles.breastfeeding)


def _cue(section: object, toks: Sequence[Tok]) -> SectionCue | None:
    from rag_server.vocabulary.sections import PhraseMatch

    if not isinstance(section, PhraseMatch):
        return None
    first, last = toks[section.position], toks[section.position + max(1, section.length) - 1]
    return SectionCue(section.section_key, section.phrase, first.start, last.end, section.weak)


def _terms(
    query: str, toks: Sequence[Tok], mentions: Sequence[Mention], cue: SectionCue | None, language: Language
) -> tuple[AskedTerm, ...]:
    words_of = read_words(query[: toks[-1].end] if toks else "")  # what the reading reads of a long question
    # a weak cue's words stay terms: "nóng" of "có làm nóng người không" is what it asks about
    strong = cue is not None and not cue.weak
    spans = _char_spans(toks, mentions) + ([(cue.start, cue.end)] if cue is not None and strong else [])
    skip = {i for i, t in enumerate(words_of.toks) if any(a <= t.start < b for a, b in spans)}
    return asked_terms(words_of, skip, language)


def _search_text(
    query: str,
    toks: Sequence[Tok],
    mentions: Sequence[Mention],
    drug_ids: Sequence[str],
) -> str:
    """The question without the names of the drugs asked about; the question when nothing is left."""
    wanted = set(drug_ids)
    drop = {i for m in mentions if wanted & set(m.drug_ids) for i in range(m.start, m.end)}
    kept = [t for i, t in enumerate(toks) if i not in drop and not t.is_punct]
    text = " ".join(t.raw for t in kept) or query
    return text


def _with_medications(reading: Reading, catalog: Catalog | None, language: Language) -> Reading:
    frame = reading.frame
    if not frame.patient.current_medications and not frame.patient.allergies:
        return reading
    return replace(reading, frame=frame.but(medications=_medications(frame.patient, catalog, language)))


def _medications(
    facts: PatientFacts, catalog: Catalog | None, language: Language
) -> tuple[MedicationName, ...]:
    if catalog is None:
        return ()
    return tuple(read_medications(list(facts.current_medications), language.clinical.medication, catalog))


def section_prior(
    toks: Sequence[Tok], rules: Rules, population: Sequence[str]
) -> tuple[tuple[str, float], ...]:
    """section_key -> additive prior for a free-form question's cue phrases (rules.toml [[free_form.prior]]):
    the first section of a cue gets `prior_weight`, the n-th `prior_weight / n`, summed over the cues and
    capped at `prior_weight`; the population sections start at `-prior_weight`. Empty without a cue."""
    weight = rules.prior_weight
    if weight <= 0:
        return ()
    prior: dict[str, float] = dict.fromkeys(population, -weight)
    for rule in rules.priors:
        if not find_any(toks, rule.cues):
            continue
        for n, key in enumerate(rule.sections, start=1):
            prior[key] = min(weight, prior.get(key, 0.0) + weight / n)
    return tuple(prior.items())


def is_smalltalk(toks: Sequence[Tok], rules: Rules) -> bool:
    if not find_any(toks, rules.greetings):
        return False
    ws = words(toks)
    spans = [(i, len(p)) for i, p in find_any(ws, union(rules.greetings, rules.smalltalk_fillers))]
    return not _remove(ws, spans)


def _remove(toks: Sequence[Tok], spans: Sequence[tuple[int, int]]) -> list[Tok]:
    drop = {j for start, n in spans for j in range(start, start + n)}
    return [t for i, t in enumerate(toks) if i not in drop]


def _echo(names: Sequence[str]) -> str:
    return ", ".join(n if len(n) <= MAX_ECHO_CHARS else n[: MAX_ECHO_CHARS - 1] + "…" for n in names[:3])


def _masked(toks: Sequence[Tok], mentions: Sequence[Mention]) -> list[Tok]:
    inside = {i for m in mentions for i in range(m.start, m.end)}
    return [Tok(_DRUG, _DRUG, t.start, t.end) if i in inside else t for i, t in enumerate(toks)]


def _mask_words(toks: Sequence[Tok], names: Sequence[str]) -> list[Tok]:
    return [Tok(_DRUG, _DRUG, t.start, t.end) if t.raw in names else t for t in toks]


def _expanded(toks: Sequence[Tok], rules: Rules) -> list[Tok]:
    return expand(toks, rules.abbreviations, rules.abbreviations_before_unit, rules.abbreviation_units)


def _only_names(toks: Sequence[Tok], names: Sequence[str], rules: Rules) -> bool:
    """Nothing but `names` and follow-up words ("còn semaglutid thì sao", "vậy còn rivaroxaban?")."""
    rest = [t for t in words(toks) if t.raw not in names]
    spans = [(i, len(p)) for i, p in find_any(rest, union(rules.followup, rules.overview_fillers))]
    return not _remove(rest, spans)


def _bare_name(toks: Sequence[Tok], rules: Rules) -> bool:
    rest = [t for t in words(toks) if t.raw != _DRUG]
    spans = [(i, len(p)) for i, p in find_any(rest, rules.overview_fillers)]
    return not _remove(rest, spans)


def situation_only(query: str, language: Language) -> Situation:
    """The situation of a question read without a corpus (no drug names known)."""
    return read(query, None, language).frame.situation
