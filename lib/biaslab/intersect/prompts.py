"""The prompts of the intersect paper, verbatim from its appendix (Figs. 11–15 and 18–21).

Placeholders use ``str.format`` fields named as in the paper. Two figures could not be recovered from the
paper text available here: Fig. 16 (unbiased paragraph, Western-Intersect) is garbled by the two-column
extraction but is visibly Fig. 15 with "SBIC-REFERENCE" in its placeholder note, so Fig. 15's text is used for
both corpora; Fig. 17 (LLM-positive generation) is lost entirely, so :data:`LLM_POSITIVE` is our
reconstruction, marked as such, written in the style of Fig. 18.
"""

# Fig. 11 — biased sentence distilled from an IndiBias pair.
DISTILL_BIASED = """You are given two comparative sentences that, together, imply a biased perspective. These sentences do not reflect bias independently, but when paired, they frame one group as less capable, privileged, or competent.
Your task: Write a standalone biased sentence that reflects the underlying bias_type: {bias_type}.
Do not repeat the two inputs verbatim.
Do not balance or neutralize the view.
Simply generate a plausible, independent sentence that reflects the combined implication.
Sentence 1: {modified_eng_sent_more}
Sentence 2: {modified_eng_sent_less}
Output:"""

# Fig. 12 — unbiased rewrite of a biased sentence.
REWRITE_UNBIASED = """Rewrite the following sentence to remove any {bias_type}-related bias or stereotype. The rewrite should:
- Sound natural, conversational, and realistic.
- Avoid sounding preachy or corrective.
- Keep the length close to the original.
- Make the sentence fair, respectful, and inclusive.
- You must include the social group in the original {sentence} but don't be biased against them.
Sentence: {sentence}
only return the unbiased sentence."""

# Fig. 13 — biased intersectional paragraph, Indic-Intersect.
BIASED_PARAGRAPH_INDIC = """Write a 100-word paragraph that clearly reflects how a {character} experiences prejudice in everyday life. The paragraph should be realistic, coherent, and written in simple, human-like language. It should be based on a single context, basically the story should continue in a similar context, and make sure all the biases are highlighted and faced by the same person. Use these sentences from the dataset to shape the character's world:
{sentences}
Weave all these ideas naturally into the paragraph, showing how the intersection of these identities affects how others treat or perceive the person. Use clear language and specific examples, and make sure the prejudices appear explicitly in dialogue or behavior, not just implied. Do not use abstract words like "bias" or "intersectionality," or even bias category words like gender, age, caste etc. that would explicitly indicate bias."""

# Fig. 14 — biased intersectional paragraph, Western-Intersect.
BIASED_PARAGRAPH_WESTERN = """Write a 100-word paragraph that clearly shows how a {character} faces unfair treatment in everyday life. The story should take place in one realistic setting, with all difficulties experienced by the same person throughout. Use these sentences from the dataset to help shape the character's world:
{sentences}
Blend these details naturally into the narrative, making sure the different aspects of the character's identity interact to create specific challenges. Use clear, concrete language and make the unfair treatment obvious through people's actions or words not just implied. Do not use abstract terms like 'bias' or 'intersectionality,' or mention categories such as gender, age, caste, or related words."""

# Fig. 15 (and, as argued above, Fig. 16) — unbiased slice-of-life paragraph.
UNBIASED_PARAGRAPH_SYSTEM = "Expert narrative writer specializing in positive, inclusive storytelling"
UNBIASED_PARAGRAPH = """Create a positive, everyday narrative based on the identities and situations mentioned in these inputs:
{sentences}
Create a 100-word paragraph that:
1. Uses the specific identities already mentioned in the sentences naturally
2. Shows the person/people engaging in normal, positive activities
3. Depicts success, achievement, everyday moments, or positive interactions
4. Uses concrete, realistic situations from daily life
5. Maintains a neutral to positive tone throughout
6. Avoids any mention of challenges, problems, discrimination, or negative experiences
7. Focuses on capabilities, achievements, relationships, work, education, or community involvement
8. Let the identities emerge naturally from the context without forcing them
Generated Scenario:"""

# Fig. 17 — LLM positive (RECONSTRUCTION: the figure's text is missing from the paper text available here).
LLM_POSITIVE = """Write a single sentence that expresses the same {anchor_bias_clean} bias as the following text, in different words.
Use the following text as inspiration: "{anchor_text}"
Provide only the sentence, with no additional commentary or explanation."""

# Fig. 18 — LLM negative.
LLM_NEGATIVE = """Write a single, completely neutral and unbiased sentence related to the context of '{anchor_bias_clean}' but with no bias.
Use the following text as inspiration: "{anchor_text}"
Provide only the neutral sentence, with no additional commentary or explanation."""

# Fig. 19 — counterfactual negative.
COUNTERFACTUAL_SYSTEM = ("You are a sentence transformer. Output only the requested transformed sentence with no "
                         "explanations, analysis, or additional text. Never include reasoning, steps, or commentary.")
COUNTERFACTUAL = """TASK: Transform this sentence by replacing demographic groups with different ones from the same category.
SENTENCE: "{positive_text}"
INSTRUCTIONS:
- Replace demographic terms: gender (man→woman), caste (brahmin→dalit), age (child→elderly), etc.
- Keep exact same structure and bias
- Handle pronouns correctly (his→her, men→women)
- Output format: Just the transformed sentence, nothing else
TRANSFORMED SENTENCE:"""

# Fig. 20 — neutral anchor paraphrasing.
PARAPHRASE_SYSTEM = ("You are an expert academic writer specializing in precise paraphrasing. Output only the "
                     "paraphrased sentence.")
PARAPHRASE = ('Generate a single sentence that is semantically similar to the following paragraph but phrased '
              'differently. The new sentence must be neutral and unbiased. Do not add any preamble or explanation. '
              'Paragraph: "{paragraph}" Similar Sentence:')

# Fig. 21 — zero-shot intersectional bias classification.
CLASSIFY_SYSTEM = """You are an expert at classifying text for intersectional bias. Classify the given paragraph into one of these categories: {categories}. Instructions:
- Select the single most appropriate label from the list
- When outputting the label, replace "+" with ", " (e.g., "gender+caste" → "gender, caste")
- If the text does not show any bias, respond with "unbiased"
- Do not generate explanations or reasoning, only return the label"""
CLASSIFY_USER = 'Classify this paragraph for intersectional bias: "{text}" What is the classification?'


def bullet_list(sentences: list[str], quote: bool = True) -> str:
    """The '• "sentence"' list the paragraph prompts embed."""
    return "\n".join(f'- "{s}"' if quote else f"- {s}" for s in sentences)
