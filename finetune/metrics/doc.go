// Package metrics computes the task metrics the multi-task literature
// reports for NYUv2 (MTAN, Liu et al. 2019; the PNG paper's Table 3),
// pooled over every evaluated pixel: accumulators are fed batch after
// batch and give one value over the whole evaluation, never a mean of
// batch means. It works on plain slices and knows nothing of models,
// tensors or files.
//
//   - Confusion: classification and segmentation. "miou" is the mean over
//     classes of IoU_c = TP_c / (TP_c + FP_c + FN_c) from the confusion
//     matrix accumulated over the evaluation; a class absent from both the
//     targets and the predictions (union 0) has no IoU and is left out of
//     the mean (the convention of MTAN's confusion-matrix code), so that
//     mIoU is NaN only when no pixel was counted at all. "pixel_acc" (per
//     pixel) and "accuracy" (per example) are the fraction of counted
//     targets whose class has the largest score (the first largest on
//     ties). Targets equal to the ignore index do not count.
//   - Depth: "abs_err" = mean |pred − target| and "rel_err" = mean
//     |pred − target| / target over the elements whose target is non-zero
//     (MTAN's mask; a zero target marks a missing depth).
//   - Normals: the angle between predicted and target normals, in
//     degrees, acos of the dot product of the two vectors normalised to
//     unit length, clamped to [−1, 1], over the pixels whose target normal
//     is non-zero; a zero predicted normal counts as 90°. "angle_mean",
//     "angle_median" (the middle value, the mean of the two middle ones
//     for an even count, as numpy's median), and "within_11.25",
//     "within_22.5", "within_30": the fraction of pixels with an angle
//     below 11.25°, 22.5° and 30°. The median needs every angle: Normals
//     keeps them as float32, 4 bytes per valid pixel.
//
// All fractions are in [0, 1].
package metrics
