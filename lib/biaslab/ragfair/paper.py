"""Numbers printed in the ragfair paper, for side-by-side tables only (never used as results)."""

# Table 1: average SEAT fairness and p-value per BBQ category (all-MiniLM-L6-v2, DeepSeek-built groups)
TABLE1 = {
    "Age": (0.5418, 0.3285), "Disability_status": (0.3420, 0.2827), "Gender_identity": (0.4652, 0.5558),
    "Nationality": (0.6881, 0.4928), "Physical_appearance": (0.4848, 0.4648), "Race_ethnicity": (0.6821, 0.4516),
    "Religion": (0.5783, 0.6202), "SES": (0.5393, 0.3046), "Sexual_orientation": (0.5058, 0.5124),
}
MEAN_FAIRNESS = 0.543
DEPTH_SPEARMAN = 0.4842  # §4.1: average Spearman coefficient of the probed bias vs depth

# Table 2: SPD, EOD, Acc@1 (%) on the paper's synthetic evaluation set
TABLE2 = {
    "Baseline (frozen encoder)": (0.135, 0.187, 73.4), "LoRA-only": (0.118, 0.168, 72.7),
    "WiSE-FT": (0.114, 0.160, 72.6), "Head masking": (0.120, 0.174, 71.9), "LoRA + masking": (0.116, 0.163, 71.4),
    "WiSE-FT + masking": (0.112, 0.157, 71.5), "LoRA + WiSE-FT": (0.109, 0.147, 71.0),
    "Full framework": (0.107, 0.154, 71.2),
}
CORRELATION_CI = {"pearson": (0.43, 0.65), "spearman": (0.39, 0.68)}  # §4.2, 10 bootstrap rounds


def table1():
    """Table 1 as a frame: category, paper_fairness, paper_p_value (to merge beside ours)."""
    import pandas as pd

    return pd.DataFrame([(c, f, p) for c, (f, p) in TABLE1.items()],
                        columns=["category", "paper_fairness", "paper_p_value"])


def table2():
    """Table 2 as a frame: checkpoint, paper_spd, paper_eod, paper_acc_at_1 (to merge beside ours)."""
    import pandas as pd

    return pd.DataFrame([(c, *v) for c, v in TABLE2.items()],
                        columns=["checkpoint", "paper_spd", "paper_eod", "paper_acc_at_1"])
