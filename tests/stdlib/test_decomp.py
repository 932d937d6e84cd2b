"""``wp.svd3``, ``wp.qr3``, ``wp.eig3`` and ``wp.svd2``: against numpy in float64 (to ~1e-14),
against NVIDIA Warp 1.19's values and gradients in float32 (pinned below; svd2's values bit for
bit in both precisions), and exact gradients (adjoint and tangent against float64 finite
differences, also at rank-deficient and near-repeated inputs, finite at exactly repeated ones).

The Warp values were printed by ``tests/data/make_decomp_reference.py`` (Warp 1.19, CPU) for
its ``matrices()`` and ``matrices2()``; its kernels (``kernels(wp)``) and launches (``run_*``)
run here under weft.
"""
from functools import partial

import numpy as np
import pytest

import weft as wp
from tests.data import make_decomp_reference as ref
from tests.data.make_decomp_reference import matrices, matrices2, rotations, with_singular_values
from tests.gradcheck import Arr, check

# --- BEGIN WARP REFERENCE (tests/data/make_decomp_reference.py, Warp 1.19.0, CPU)
WARP = {}
WARP['U32'] = np.reshape([
    -0.49622804, 0.8242843, -0.2726035, -0.85317296, -0.52113277, -0.02271898, -0.16078958,
    0.22130425, 0.96185815, -0.17700273, -0.7992767, -0.57430476, -0.5036247, 0.57489085,
    -0.64487356, 0.8455957, 0.17508973, -0.50429296, 0.33699298, -0.4989747, 0.7984108, 0.20260328,
    0.86657894, 0.45606223, -0.91944957, 0.008070879, 0.39312494, -0.3597762, -0.665981, 0.6534757,
    0.6026239, 0.36883718, 0.7076747, -0.7123241, 0.64840466, 0.2686372,
], (4, 3, 3))
WARP['s32'] = np.reshape([
    3.024174, 2.072122, 0.86623293, 3.590694, 0.47735018, -0.16560413, 1.4999999, 1.4969999,
    0.39999995, 2.9999993, 0.9999997, -0.09999998,
], (4, 3))
WARP['V32'] = np.reshape([
    0.72343665, -0.680757, -0.11493094, 0.6704317, 0.65298045, 0.35233185, -0.16480483,
    -0.33194312, 0.92879117, -0.15094668, 0.9713879, -0.18335855, -0.25328702, 0.14128709,
    0.95701796, 0.95554215, 0.19090106, 0.22471315, 0.961799, -0.10414305, -0.25317344,
    -0.19263947, 0.39961365, -0.8962136, 0.19450605, 0.9107486, 0.36428592, -0.870409, -0.275872,
    0.40777707, 0.48645258, -0.609491, 0.6260065, 0.07583913, 0.7432461, 0.6647055,
], (4, 3, 3))
WARP['Q32'] = np.reshape([
    -0.8526774, 0.3728022, -0.36600512, -0.43346563, -0.89590204, 0.09729946, -0.29163125,
    0.24161568, 0.9255123, -0.40917206, 0.8662799, -0.28659725, 0.72830015, 0.120844096,
    -0.6745192, -0.54968846, -0.4847231, -0.6803576, 0.33212352, -0.8427331, 0.42366835,
    0.07631418, 0.4717002, 0.87845033, -0.94014364, -0.25942212, 0.2209752, 0.41755664, 0.548021,
    0.7247893, -0.64895207, -0.37845886, 0.660023, 0.6360093, -0.74595046, 0.19761133,
], (4, 3, 3))
WARP['R32'] = np.reshape([
    2.605034, 0.9584315, -0.07686536, 0.000000015055884, 2.2618766, -0.7170833, 0.000000057671777,
    0.0, 0.9212444, 0.7139331, 0.7275193, -2.547187, 0.000000013958761, 0.57230216, -2.193416,
    -0.00000008312991, 0.000000059604645, -0.694712, 1.454627, -0.32574794, 0.13309838,
    -0.000000004831274, 0.6810045, 1.0608208, -0.000000005671855, -0.000000059604645, 0.90671617,
    2.6260772, -1.3861055, -0.30327767, 0.000000045790475, 0.7640892, -0.7030417, 0.00000017285156,
    0.000000074505806, -0.14951006,
], (4, 3, 3))
WARP['E32'] = np.reshape([
    0.6363747, -0.73714083, -0.22726737, 0.7713687, 0.60971737, 0.18230474, 0.004184559,
    -0.29132107, 0.95661616, 0.96018565, 0.22795159, -0.16149813, -0.27383727, 0.8823944,
    -0.38261393, 0.05528763, 0.4116046, 0.909684, 0.6133915, -0.65636814, 0.4392398, 0.78959477,
    0.49764806, -0.3590074, 0.01705429, 0.5670335, 0.82351804, 0.5813118, -0.7202691, 0.37853462,
    0.20536515, 0.58002615, 0.7882857, -0.7873381, -0.3805017, 0.48509443,
], (4, 3, 3))
WARP['d32'] = np.reshape([
    -5.78826, -4.0432568, 1.908839, -0.84955376, 0.29717407, 7.0381827, 0.18012755, 2.982908,
    -2.004003, 0.112432286, 4.2489753, -0.3436543,
], (4, 3))
WARP['U64'] = np.reshape([
    -0.496228153983433, 0.8242845270584029, -0.27260344393697356, -0.8531730983213079,
    -0.5211329105263168, -0.022719019943406915, -0.16078956276765435, 0.22130410754993726,
    0.96185820601922, -0.17700292949941235, -0.7992768888225967, -0.574305160992566,
    -0.5036248576087636, 0.574891298620442, -0.6448736291468701, 0.845595627795685,
    0.17508983341294554, -0.5042931533227957, 0.336995851217839, -0.4989728238897946,
    0.7984108699669664, 0.20259823366616114, 0.8665800993862465, 0.4560623719000229,
    -0.9194497006238652, 0.008065504768295552, 0.3931249110085965, -0.35977633461655706,
    -0.6659809602976912, 0.6534755921768163, 0.6026239862994303, 0.36883692998725914,
    0.7076748195422516, -0.7123238871373468, 0.6484047189823182, 0.2686373023520773,
], (4, 3, 3))
WARP['s64'] = np.reshape([
    3.024174932388058, 2.0721229340619733, 0.8662330355604284, 3.5906941802180183,
    0.4773504527992946, -0.1656042541387802, 1.500000016822103, 1.4969999628954591,
    0.40000000142446085, 3.0000000173253305, 0.9999999828915993, -0.0999999793816423,
], (4, 3))
WARP['V64'] = np.reshape([
    0.7234366521362028, -0.6807571259545214, -0.11493104805970487, 0.6704317728382935,
    0.6529803386215663, 0.3523321094401798, -0.16480487952383335, -0.3319433879983209,
    0.9287911169091416, -0.1509466615707391, 0.9713878727700888, -0.18335949933354212,
    -0.25328705698591003, 0.14128804787265903, 0.9570179487824385, 0.9555421351903144,
    0.1909012523885891, 0.22471301633951485, 0.9617996248595129, -0.1041375125266743,
    -0.25317357702741605, -0.19264190200683598, 0.39961277892547803, -0.8962135484975919,
    0.19450084629967251, 0.9107496941554325, 0.36428617237619304, -0.8704094317056968,
    -0.2758714623488199, 0.4077773380894171, 0.48645229359275033, -0.6094911416719021,
    0.6260069602503113, 0.07583921977525454, 0.7432465839040273, 0.6647051438486653,
], (4, 3, 3))
WARP['Q64'] = np.reshape([
    -0.8526774109710018, 0.37280223484834063, -0.36600509082780847, -0.4334656340745487,
    -0.8959019820200546, 0.09729944855387196, -0.291631234431669, 0.24161567065201045,
    0.9255123396255936, -0.4091719113822061, 0.8662795294468513, -0.28659749440142324,
    0.7283000500989685, 0.12084376631533028, -0.6745189553812151, -0.5496884426306161,
    -0.484723179767656, -0.6803572995377206, 0.3321235384820729, -0.84273311999121,
    0.4236683179753092, 0.07631417782688912, 0.47170015125971587, 0.8784504047265087,
    -0.9401436600056148, -0.25942215744119035, 0.22097520851852415, 0.41755667473575087,
    0.548021163211583, 0.7247890921198016, -0.6489519043942548, -0.378458634951567,
    0.6600230961213911, 0.6360093153144005, -0.745950310880571, 0.19761144837910377,
], (4, 3, 3))
WARP['R64'] = np.reshape([
    2.6050342642339177, 0.9584315208664701, -0.07686536427496593, 0.0, 2.2618763548192113,
    -0.7170832912051404, 0.0, 0.0, 0.921244416092737, 0.7139329774033206, 0.7275192281738858,
    -2.547186996367535, 1.4184143300348218e-16, 0.5723020142896351, -2.1934158403352324,
    1.0342092145071236e-16, 0.0, -0.6947115641646154, 1.4546271357091474, -0.32574795150999664,
    0.13309837555106713, -1.3577479897142557e-16, 0.681004513027199, 1.060820687627731,
    9.742272916462506e-17, -1.1102230246251565e-16, 0.9067161921041276, 2.6260771450966027,
    -1.3861055492290704, -0.303277669190665, -1.293492506129473e-16, 0.7640891447092152,
    -0.703041645322195, 3.788220462682802e-16, 2.7755575615628914e-17, -0.1495097965339773,
], (4, 3, 3))
WARP['E64'] = np.reshape([
    0.6363747022658002, -0.737140937420881, -0.2272674123018476, 0.7713687366279713,
    0.6097173381282359, 0.18230479900097232, 0.004184551240072484, -0.2913211388898549,
    0.9566161631327567, 0.9601856484842402, 0.2279515176816635, -0.1614980681975033,
    -0.2738371793897932, 0.8823944208126928, -0.3826137547220102, 0.0552876082747427,
    0.4116044116688481, 0.9096840598064803, 0.6133914327663779, -0.6563682742213117,
    0.4392398420049648, 0.7895948969547668, 0.4976479959698241, -0.3590074801591304,
    0.017054293060717707, 0.5670336504149943, 0.8235180571094024, 0.581311519644226,
    -0.7202696959687045, 0.3785346512514689, 0.2053654632221012, 0.5800257361486185,
    0.788286224616938, -0.7873385190910533, -0.38050191914680775, 0.48509416187076915,
], (4, 3, 3))
WARP['d64'] = np.reshape([
    -5.7882606632743165, -4.043257719408476, 1.9088390776062025, -0.8495537543792322,
    0.2971740552251194, 7.038181574745391, 0.18012758108430654, 2.9829085664326183,
    -2.004003206652364, 0.11243237087231314, 4.248977379229115, -0.3436545397017975,
], (4, 3))
WARP['grad32'] = np.reshape([
    -0.43757123, -0.5066558, 0.47410882, -0.6081487, 0.06715217, -0.2210238, -0.71024215,
    0.7771033, 1.1648962, 0.0029293885, -0.5128888, 0.69828683, -0.42576912, -0.3530832,
    -0.06958245, -0.40442017, 0.30990586, 1.1478474, 0.062357165, 0.7688615, -0.8364811, 0.7688615,
    1.0441891, 0.4681847, -0.8364811, 0.4681847, 2.2934535, 2.815057, -0.28748983, -0.01047425,
    2.7350206, -0.35442978, -0.41815582, 2.2523139, -0.21782434, 0.63465077, 3.716742, -0.27100757,
    0.6587452, -2.2898612, -0.17577939, -1.1225789, -6.346309, -0.940766, -0.3403995, 1.2475064,
    -0.4852984, -0.46408224, -0.4852984, 0.0636766, -1.0820171, -0.46408224, -1.0820171, 2.088817,
    -42.68687, 18.8912, 19.098864, 67.939255, -7.5635624, 30.069788, 7.929924, -31.492914,
    -69.23466, -0.010655698, 0.63849086, -0.4656163, 0.3569319, 1.461521, 0.91709775, -0.29389134,
    -0.1876389, 0.8672562, 0.28030574, 0.4192284, 0.9809519, 0.4192284, 1.4382792, -1.0870874,
    0.9809519, -1.0870874, 1.6814146, 0.79348904, 0.24993488, 2.2511196, -1.4125369, -0.3388269,
    1.2919911, -0.23594362, 0.008159727, -0.0954891, 0.47278604, 0.3738744, 0.53284395, -0.6003177,
    -0.3496379, 0.88499737, -0.45123783, 0.1839426, -0.861891, 1.2014073, 2.6028974, -0.40445572,
    2.6028974, 2.7668417, -0.73559296, -0.40445572, -0.73559296, -0.5682523,
], (4, 3, 3, 3))
WARP['svd2_U32'] = np.reshape([
    0.31850713, 0.9479205, -0.9479205, 0.31850713, -0.85610944, -0.5167944, -0.5167944, 0.85610944,
    0.57355136, -0.8191697, 0.8191697, 0.57355136, 0.3162278, -0.94868326, 0.94868326, 0.3162278,
    1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0,
], (6, 2, 2))
WARP['svd2_s32'] = np.reshape([
    2.4824214, 0.26216975, 0.81637853, 0.12596178, 1.5, 1.4969999, 3.5355337, 0.0, 2.0, 2.0, 0.0,
    0.0,
], (6, 2))
WARP['svd2_V32'] = np.reshape([
    0.8258797, 0.5638463, -0.5638463, 0.8258797, 0.8668331, 0.49859846, -0.49859846, 0.8668331,
    0.29884464, 0.95430183, -0.95430183, 0.29884464, 0.4472136, 0.8944272, -0.8944272, 0.4472136,
    1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0,
], (6, 2, 2))
WARP['svd2_U64'] = np.reshape([
    0.31850714365695115, 0.9479204605026152, -0.9479204605026152, 0.31850714365695115,
    -0.8561095376781316, -0.5167944073773784, -0.5167944073773784, 0.8561095376781316,
    0.5735398142383652, -0.8191776861483847, 0.8191776861483847, 0.5735398142383652,
    0.31622776601683794, -0.948683298050514, 0.948683298050514, 0.31622776601683794, 1.0, 0.0, 0.0,
    1.0, 1.0, 0.0, 0.0, 1.0,
], (6, 2, 2))
WARP['svd2_s64'] = np.reshape([
    2.4824215872745343, 0.2621699189849414, 0.8163785072629766, 0.12596179479654698,
    1.499999987363505, 1.4969999512672012, 3.5355339059327378, 0.0, 2.0, 2.0, 0.0, 0.0,
], (6, 2))
WARP['svd2_V64'] = np.reshape([
    0.825879732105198, 0.5638463160275557, -0.5638463160275557, 0.825879732105198,
    0.8668330904138076, 0.4985984289622736, -0.4985984289622736, 0.8668330904138076,
    0.2988580586887532, 0.9542975745315451, -0.9542975745315451, 0.2988580586887532,
    0.447213595499958, 0.894427190999916, -0.894427190999916, 0.447213595499958, 1.0, 0.0, 0.0,
    1.0, 1.0, 0.0, 0.0, 1.0,
], (6, 2, 2))
WARP['svd2_grad32'] = np.reshape([
    0.1424891, -0.3790758, -0.6584537, 0.14772825, -0.8855634, 0.19205767, -0.19182178, -0.4854692,
    -7.0136423, -23.835936, -23.396072, 6.9291577, 0.40795338, -0.11551069, 0.27933198, -0.578796,
    0.7, 0.0, 0.0, -0.3, 0.7, 0.0, 0.0, -0.3,
], (6, 2, 2))
# --- END WARP REFERENCE


K = ref.kernels(wp)   # the kernels of the reference script, compiled by weft
decomp64, svd2_64 = K["decomp64"], K["svd2_64"]
_run32 = partial(ref.run_losses32, wp, K["losses32"])
_run_svd2_64 = partial(ref.run_svd2_64, wp, svd2_64)
_run_svd2_32 = partial(ref.run_svd2_losses32, wp, K["svd2_losses32"])


def _run64(A, S):
    return [o.numpy() for o in ref.run_decomp64(wp, decomp64, A, S)[1]]


def _assert_rotations(M, tol):
    eye = np.broadcast_to(np.eye(3), M.shape)
    np.testing.assert_allclose(np.swapaxes(M, 1, 2) @ M, eye, atol=tol)
    np.testing.assert_allclose(np.linalg.det(M), 1.0, atol=tol)


def _check_decompositions(A, S, res, tol):
    """Warp's conventions and numpy's values, to ``tol`` relative to each matrix's norm."""
    U, s, V, Q, R, E, d = (np.asarray(x, np.float64) for x in res)
    scale = np.maximum(np.abs(A).max(axis=(1, 2)), 1e-300)[:, None, None]
    for M in (U, V, Q, E):
        _assert_rotations(M, tol)
    # svd3: A = U diag(sigma) V^T, |sigma| decreasing, sigma[2] has the sign of det(A)
    np.testing.assert_allclose((U * s[:, None, :]) @ np.swapaxes(V, 1, 2) / scale, A / scale,
                               atol=tol)
    np.testing.assert_allclose(np.abs(s) / scale[:, 0], np.linalg.svd(A, compute_uv=False)
                               / scale[:, 0], atol=tol)
    assert np.all(s[:, :2] >= 0)
    assert np.all(np.abs(s[:, :2]) >= np.abs(s[:, 1:]) - tol * scale[:, 0])
    det = np.linalg.det(A)
    clear = np.abs(det) > 1e-3 * scale[:, 0, 0] ** 3
    assert np.all(np.sign(s[clear, 2]) == np.sign(det[clear]))
    # qr3: A = Q R, R upper triangular (exactly) with R[0, 0], R[1, 1] >= 0
    np.testing.assert_allclose(Q @ R / scale, A / scale, atol=tol)
    assert not np.tril(R, -1).any()
    assert np.all(R[:, 0, 0] >= 0) and np.all(R[:, 1, 1] >= 0)
    # eig3: S = E diag(d) E^T, d unsorted (Jacobi's order, as Warp)
    sscale = np.maximum(np.abs(S).max(axis=(1, 2)), 1e-300)[:, None, None]
    np.testing.assert_allclose((E * d[:, None, :]) @ np.swapaxes(E, 1, 2) / sscale, S / sscale,
                               atol=tol)
    np.testing.assert_allclose(np.sort(d, axis=1) / sscale[:, 0], np.linalg.eigvalsh(S)
                               / sscale[:, 0], atol=tol)


def _special(rng):
    """Random matrices with negative determinants, near-repeated, repeated and zero singular
    values, the identity and the zero matrix."""
    n = 64
    A = [rng.normal(size=(n, 3, 3)),
         with_singular_values(rng, [[1.0, 1.0 + 1e-9, 0.3]] * 8),      # near-repeated
         with_singular_values(rng, [[2.0, 1.0, -1.0]] * 8),            # repeated |sigma|
         with_singular_values(rng, [[2.0, 1.0, 0.0]] * 8),             # rank 2
         with_singular_values(rng, [[1e3, 1.0, 1e-3]] * 8),            # condition 1e6
         np.array([np.eye(3), np.diag([2.0, 2.0, 1.0]), np.zeros((3, 3)),
                   np.outer([1.0, 2.0, 3.0], [0.5, -1.0, 2.0])])]
    A = np.concatenate(A)
    S = A + np.swapaxes(A, 1, 2)
    return A, S


def test_float64_against_numpy():
    rng = np.random.default_rng(5)
    A, S = _special(rng)
    res = _run64(A, S)
    # A^T A squares the condition number: the condition-1e6 matrices lose more digits
    well = np.ones(len(A), bool)
    well[88:96] = False
    _check_decompositions(A[well], S[well], [r[well] for r in res], 1e-13)
    _check_decompositions(A[~well], S[~well], [r[~well] for r in res], 1e-12)


def test_float32_converges():
    # Warp's 4 float32 sweeps leave about 2% of random matrices unconverged (reconstruction
    # errors up to 1e-2); weft's 5 do not
    rng = np.random.default_rng(6)
    A = rng.normal(size=(200, 3, 3)).astype(np.float32).astype(np.float64)  # serial launch
    _, res, _, _ = _run32(A)
    _check_decompositions(A, A + np.swapaxes(A, 1, 2), res, 2e-5)


def test_matches_warp():
    A = matrices().astype(np.float64)
    keys = "U s V Q R E d".split()
    res64 = _run64(A, A + np.swapaxes(A, 1, 2))
    _, res32, _, _ = _run32(A)
    for k, got64, got32 in zip(keys, res64, res32):
        want64, want32 = WARP[k + "64"], WARP[k + "32"]
        if k == "R":  # weft's R is exactly upper triangular; Warp leaves rounding residue
            want64, want32 = np.triu(want64), np.triu(want32)
        np.testing.assert_allclose(got64, want64, atol=1e-13, err_msg=k)
        np.testing.assert_allclose(got32, want32, atol=2e-6, err_msg=k)


def test_gradients_match_warp():
    A, _, loss, tape = _run32(matrices(), requires_grad=True)
    for k in range(3):
        seed = np.zeros((len(A.numpy()), 3))
        seed[:, k] = 1.0
        tape.backward(grads={loss: seed})
        got = A.grad.numpy()
        want = WARP["grad32"][:, k]
        scale = np.abs(want).max(axis=(1, 2), keepdims=True)
        np.testing.assert_allclose(got / scale, want / scale, atol=2e-5, err_msg=f"loss {k}")
        tape.zero()


def test_gradients_against_finite_differences():
    rng = np.random.default_rng(7)
    A = np.concatenate([rng.normal(size=(2, 3, 3)),
                        with_singular_values(rng, [[1.5, 1.497, -0.4],    # near-repeated
                                                   [2.0, 1.0, 0.0]])])    # rank 2
    A[1, 0] *= -1.0  # a negative determinant
    S = rng.normal(size=(4, 3, 3))
    S = S + np.swapaxes(S, 1, 2)
    rot = rotations(rng, 1)[0]
    S[3] = rot @ np.diag([1.0, 1.003, 2.0]) @ rot.T  # near-repeated eigenvalues
    m = lambda: Arr(np.zeros((4, 3, 3)), wp.mat33d)  # noqa: E731
    v = lambda: Arr(np.zeros((4, 3)), wp.vec3d)      # noqa: E731
    check(decomp64, 4, [Arr(A, wp.mat33d), Arr(S, wp.mat33d)], [m(), v(), m(), m(), m(), m(), v()],
          rtol=1e-6)


def test_repeated_values_give_finite_gradients():
    # exactly repeated singular values / eigenvalues: U, V, Q are not differentiable there;
    # the coupling of the coinciding pair is dropped (Warp's adj_eig3 divides by zero here)
    A = np.array([np.eye(3), np.diag([2.0, 2.0, 1.0]), np.zeros((3, 3))])
    S = np.array([np.eye(3), np.diag([1.0, 1.0, 2.0]), np.zeros((3, 3))])
    rng = np.random.default_rng(8)
    (a, sa), outs, tape = ref.run_decomp64(wp, decomp64, A, S, requires_grad=True)
    U, s, V = (o.numpy() for o in outs[:3])
    # the sigma part alone: d(sum sigma)/dA = U V^T (the identity for the first two)
    tape.backward(grads={outs[1]: np.ones((3, 3))})
    np.testing.assert_allclose(a.grad.numpy(), U @ np.swapaxes(V, 1, 2), atol=1e-14)
    np.testing.assert_allclose(a.grad.numpy()[:2], np.array([np.eye(3)] * 2), atol=1e-14)
    tape.zero()
    dy = {o: rng.normal(size=o.numpy().shape) for o in outs}
    tape.backward(grads=dy)
    assert np.all(np.isfinite(a.grad.numpy())) and np.all(np.isfinite(sa.grad.numpy()))
    dx = {a: rng.normal(size=(3, 3, 3)), sa: rng.normal(size=(3, 3, 3))}
    tan = wp.jvp(decomp64, 3, inputs=[a, sa], outputs=outs, tangents=dx)
    assert all(np.all(np.isfinite(tan[o].numpy())) for o in outs)
    _assert_adjoint_is_tangent_transposed(dx, dy, tan)


def _assert_adjoint_is_tangent_transposed(dx, dy, tan):
    """<J dx, dy> == <dx, J^T dy>: where the coupling of coinciding values is dropped, the
    adjoint and tangent rules must drop the same terms."""
    lhs = sum(float((tan[o].numpy() * g).sum()) for o, g in dy.items())
    rhs = sum(float((x.grad.numpy() * d).sum()) for x, d in dx.items())
    assert lhs == pytest.approx(rhs, rel=1e-10, abs=1e-10)


# ------------------------------------------------------------------------------------ svd2

def _check_svd2(A, U, s, V, tol):
    """Warp's conventions, to ``tol`` relative to each matrix's largest entry: A = U diag(s) V^T,
    s[0] >= s[1] >= 0, V a rotation whose first column (c, s) has c >= s, U orthogonal with
    det(U) = sign(det(A)) (+1 at 0), so U is a reflection exactly where det(A) < 0."""
    scale = np.maximum(np.abs(A).max(axis=(1, 2)), 1e-300)
    eye = np.broadcast_to(np.eye(2), U.shape)
    np.testing.assert_allclose((U * s[:, None, :]) @ np.swapaxes(V, 1, 2) / scale[:, None, None],
                               A / scale[:, None, None], atol=tol)
    np.testing.assert_allclose(s / scale[:, None], np.linalg.svd(A, compute_uv=False)
                               / scale[:, None], atol=tol)
    assert np.all(s[:, 1] >= 0) and np.all(s[:, 0] >= s[:, 1])
    for M in (U, V):
        np.testing.assert_allclose(np.swapaxes(M, 1, 2) @ M, eye, atol=1e-15)
    np.testing.assert_allclose(np.linalg.det(V), 1.0, atol=1e-15)
    assert np.all(V[:, 0, 0] >= V[:, 1, 0])
    det = np.linalg.det(A)
    clear = np.abs(det) > 1e-6 * scale ** 2
    np.testing.assert_allclose(np.linalg.det(U)[clear], np.sign(det[clear]), atol=1e-15)


def test_svd2_float64_against_numpy():
    rng = np.random.default_rng(12)
    A = np.concatenate([
        rng.normal(size=(64, 2, 2)),                              # half with det < 0
        with_singular_values(rng, [[1.0, 1.0 + 1e-9]] * 8),      # near-repeated
        with_singular_values(rng, [[2.0, 2.0]] * 4),             # repeated: rotations
        with_singular_values(rng, [[2.0, 2.0]] * 4) @ np.diag([1.0, -1.0]),  # reflections
        with_singular_values(rng, [[1e3, 1.0]] * 8),             # condition 1e3
        np.array([np.eye(2), -np.eye(2), [[0.0, -1.0], [1.0, 0.0]], [[0.0, 2.0], [2.0, 0.0]],
                  np.diag([1.0, -1.0]), np.zeros((2, 2))]),
        with_singular_values(rng, [[2.0, 0.0]] * 8),             # rank 1
        np.array([np.outer([1.0, 3.0], [0.5, -1.0]), np.outer([0.3, -0.2], [1.1, 0.7])])])
    _, outs, _ = _run_svd2_64(A)
    U, s, V = (o.numpy() for o in outs)
    # Warp's closed form takes sigma[1] = sqrt(lambda_2(A^T A)): an absolute error of about
    # eps * cond(A) * sigma[0], up to sqrt(eps) * sigma[0] next to rank 1
    _check_svd2(A[:-10], U[:-10], s[:-10], V[:-10], 1e-13)
    _check_svd2(A[-10:], U[-10:], s[-10:], V[-10:], 5e-8)
    # A^T A exactly s^2 I (as for most of the rotations and reflections above): Warp returns
    # U = V = I, not an SVD unless A = s I; weft's U = A / s, V = I
    np.testing.assert_array_equal(U[88:93], A[88:93] / s[88:93, :1, None])
    np.testing.assert_array_equal(V[88:93], np.broadcast_to(np.eye(2), (5, 2, 2)))
    np.testing.assert_array_equal(U[93], np.eye(2))  # zero: U = V = I, sigma = 0 (Warp's)
    np.testing.assert_array_equal(s[93], [0.0, 0.0])


def test_svd2_matches_warp_bit_for_bit():
    A = matrices2()
    _, outs, _ = _run_svd2_64(A.astype(np.float64))
    _, res32, _, _ = _run_svd2_32(A)
    for k, got64, got32 in zip("U s V".split(), (o.numpy() for o in outs), res32):
        np.testing.assert_array_equal(got64, WARP["svd2_" + k + "64"], err_msg=k)
        np.testing.assert_array_equal(got32, WARP["svd2_" + k + "32"].astype(np.float32),
                                      err_msg=k)


def test_svd2_departures_from_warp():
    # Warp 1.19 returns U = V = I, sigma = (1, 1) for these (A^T A exactly I): reconstruction
    # errors of 1 to 2; and sigma[1] = NaN for the last (lambda_2 rounds negative)
    A = np.array([-np.eye(2), [[0.0, -1.0], [1.0, 0.0]], np.diag([1.0, -1.0]),
                  [[0.12948342, 1.4972181], [-0.13073277, -1.508579]]], np.float32)
    _, (U, s, V), _, _ = _run_svd2_32(A)
    np.testing.assert_array_equal(U[:3], A[:3])
    np.testing.assert_array_equal(s[:3], np.ones((3, 2)))
    np.testing.assert_array_equal(V[:3], np.broadcast_to(np.eye(2), (3, 2, 2)))
    a = A[3].astype(np.float64)
    assert np.isfinite(s[3]).all()
    np.testing.assert_allclose(s[3], np.linalg.svd(a, compute_uv=False), rtol=1e-3)
    np.testing.assert_allclose((U[3] * s[3]) @ V[3].T, a, atol=1e-6)


def test_svd2_gradient_matches_warp():
    A, _, loss, tape = _run_svd2_32(matrices2(), requires_grad=True)
    tape.backward(grads={loss: np.ones(len(matrices2()))})
    got, want = A.grad.numpy(), WARP["svd2_grad32"]
    scale = np.maximum(np.abs(want).max(axis=(1, 2), keepdims=True), 1.0)
    np.testing.assert_allclose(got / scale, want / scale, atol=2e-5)


def test_svd2_gradients_against_finite_differences():
    rng = np.random.default_rng(13)
    A = np.concatenate([rng.normal(size=(2, 2, 2)),
                        with_singular_values(rng, [[1.5, 1.497], [2.0, 0.05]])])
    if np.linalg.det(A[0]) * np.linalg.det(A[1]) > 0:
        A[1, 0] *= -1.0  # one negative determinant
    m = lambda: Arr(np.zeros((4, 2, 2)), wp.mat22d)  # noqa: E731
    check(svd2_64, 4, [Arr(A, wp.mat22d)], [m(), Arr(np.zeros((4, 2)), wp.vec2d), m()],
          rtol=1e-6)


def test_svd2_degenerate_inputs_give_finite_gradients():
    # repeated singular values (U, V not differentiable: the coupling is dropped), zero, and
    # rank 1 (sigma[1] = |det A| / sigma[0] has a kink: the one-sided derivative of det > 0)
    A = np.array([2.0 * np.eye(2), -np.eye(2), [[0.0, -1.0], [1.0, 0.0]], np.zeros((2, 2)),
                  [[0.5, -1.0], [1.5, -3.0]]])
    a, outs, tape = _run_svd2_64(A, requires_grad=True)
    U, s, V = (o.numpy() for o in outs)
    tape.backward(grads={outs[1]: np.ones((5, 2))})  # d(sigma[0] + sigma[1])/dA = U V^T
    np.testing.assert_allclose(a.grad.numpy(), U @ np.swapaxes(V, 1, 2), atol=1e-15)
    np.testing.assert_allclose(a.grad.numpy()[:3], A[:3] / s[:3, :1, None], atol=1e-15)
    tape.zero()
    rng = np.random.default_rng(14)
    dy = {o: rng.normal(size=o.numpy().shape) for o in outs}
    tape.backward(grads=dy)
    assert np.all(np.isfinite(a.grad.numpy()))
    dx = {a: rng.normal(size=(5, 2, 2))}
    tan = wp.jvp(svd2_64, 5, inputs=[a], outputs=outs, tangents=dx)
    assert all(np.all(np.isfinite(tan[o].numpy())) for o in outs)
    _assert_adjoint_is_tangent_transposed(dx, dy, tan)


@wp.kernel
def value_forms(a: wp.array(dtype=wp.mat33d), b: wp.array(dtype=wp.mat22d),
                out3: wp.array(dtype=wp.vec3d), out2: wp.array(dtype=wp.vec2d),
                rec: wp.array(dtype=wp.mat33d)):
    i = wp.tid()
    U, s, V = wp.svd3(a[i])                       # Warp's value-returning overloads
    out3[i] = s
    Q, R = wp.qr3(a[i])
    rec[i] = Q * R
    U2, s2, V2 = wp.svd2(b[i])
    out2[i] = s2


def test_value_returning_forms_equal_the_output_argument_forms():
    rng = np.random.default_rng(21)
    a = rng.normal(size=(3, 3, 3))
    b = rng.normal(size=(3, 2, 2))
    out3 = wp.zeros(3, dtype=wp.vec3d)
    out2 = wp.zeros(3, dtype=wp.vec2d)
    rec = wp.zeros(3, dtype=wp.mat33d)
    wp.launch(value_forms, 3, inputs=[wp.array(a, dtype=wp.mat33d), wp.array(b, dtype=wp.mat22d)],
              outputs=[out3, out2, rec])
    s3 = np.linalg.svd(a, compute_uv=False)
    s3[:, 2] *= np.sign(np.linalg.det(a))  # Warp's convention: sigma[2] has det's sign
    np.testing.assert_allclose(out3.numpy(), s3, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out2.numpy(), np.linalg.svd(b, compute_uv=False), rtol=1e-10)
    np.testing.assert_allclose(rec.numpy(), a, rtol=1e-12, atol=1e-12)


def test_wrong_number_of_output_variables_is_a_kernel_error():
    from weft.core.errors import KernelError

    @wp.kernel
    def two_outputs(a: wp.array(dtype=wp.mat33d)):
        U = wp.mat33d()
        s = wp.vec3d()
        wp.svd3(a[0], U, s)

    with pytest.raises(KernelError, match=r"takes 1 input\(s\), then either nothing .* or 3 "
                                          r"output variables; got 3 arguments"):
        two_outputs.compiled()


def test_rules_reuse_the_decomposition_instead_of_computing_it_again():
    # the grad and tangent rules take the result as ``ret``: the adjoint replays each
    # decomposition once and its rule reads that; the tangent computes it once
    import ast
    tree = ast.parse(decomp64.source("all"))
    defs = {d.name: d for d in tree.body if isinstance(d, ast.FunctionDef)}

    def calls(fname, callee):
        return sum(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and
                   n.func.id == callee for n in ast.walk(defs[fname]))

    for p in ("_svd__mat33d", "_qr__mat33d", "_eig__mat33d"):
        assert calls(f"{p}__adj", p) == 0 and calls(f"{p}__tangent", p) == 0, p
        assert calls(f"{p}__jvp", p) == 1, p
        # every other adjoint calls it at most as often as its forward does (its replay)
        users = [n for n in defs if n.endswith("__adj") and n[:-5] in defs and calls(n[:-5], p)]
        assert users, p
        for n in users:
            assert calls(n, p) <= calls(n[:-5], p), (n, p)
